// Emails sent to users: the template formatter (nunjucks, so wazo-auth's Jinja templates work as
// they are) and the calls to the active email notification plugin.
import { existsSync, readFileSync } from "node:fs";
import type { AppContext } from "../../boot/context.ts";
import { ServiceUnavailable } from "../../domain/errors.ts";
import type {
  ConfirmationContext,
  ConnectionParams,
  EmailNotificationPlugin,
  NoticeContext,
  PasswordResetContext,
  TemplateFormatter,
} from "../../plugins/email-types.ts";
import { embeddedFile } from "../../boot/embedded.ts";
import { nunjucks, type Environment, type Template } from "../templating.ts";
import { REFERENCE_LOCALE, translator } from "../i18n/catalogue.ts";

let env: Environment | null = null;

const formatters = new WeakMap<object, TemplateFormatter>();

/** Templates are read once per configuration, from the paths it names. */
export function templateFormatter(config: AppContext["config"]): TemplateFormatter {
  let formatter = formatters.get(config);
  if (!formatter) formatters.set(config, (formatter = newFormatter(config)));
  return formatter;
}

/** Each template's configuration key and the path it names. */
const templateKeys = {
  email_confirmation: "email_confirmation_template",
  email_confirmation_subject: "email_confirmation_subject_template",
  email_confirmation_get_body: "email_confirmation_get_response_body_template",
  password_reset_email: "password_reset_email_template",
  password_reset_email_subject: "password_reset_email_subject_template",
} as const;

/** Start-up warnings: the template keys naming a file that is not there (its mails would fail). */
export function missingTemplates(config: AppContext["config"]): string[] {
  return Object.values(templateKeys)
    .filter((key) => embeddedFile(config[key]) === undefined && !existsSync(config[key]))
    .map((key) => `${key}: no file at ${config[key]}; the mails (or page) it renders cannot be sent until it exists`);
}

/**
 * The sender of a kind of mail: its `*_from_address`, else `noreply@` the host of `public_url`
 * (never a third party's domain).
 */
export function senderAddress(config: AppContext["config"], kind: "email_confirmation" | "password_reset"): string {
  const configured = config[`${kind}_from_address`];
  if (configured) return configured;
  return `noreply@${config.public_url ? new URL(config.public_url).hostname : "localhost"}`;
}

function newFormatter(config: AppContext["config"]): TemplateFormatter {
  const paths = Object.fromEntries(Object.entries(templateKeys).map(([name, key]) => [name, config[key]])) as Record<
    keyof typeof templateKeys,
    string
  >;
  const compiled = new Map<string, Template>();
  return {
    render(name, context) {
      let template = compiled.get(name);
      if (!template) {
        env ??= new (nunjucks().Environment)(null, { autoescape: false, throwOnUndefined: false });
        template = nunjucks().compile(embeddedFile(paths[name]) ?? readFileSync(paths[name], "utf8"), env);
        compiled.set(name, template);
      }
      // The stock templates write their text as `t("mail.…", {…})` (templates/locales/*.json), in the
      // mail's language; an operator's own template may use `t` and `locale` too, or ignore them.
      const locale = (context as { locale?: string }).locale ?? REFERENCE_LOCALE;
      return template.render({ ...(context as object), locale, t: translator(locale) });
    },
  };
}

/**
 * The link parts of the configured `public_url` (an explicit port is kept even when it is the
 * scheme's default, as the Host header would give it); null when none is configured.
 */
export function publicConnection(publicUrl: string | null): ConnectionParams | null {
  if (!publicUrl) return null;
  const url = new URL(publicUrl);
  const port = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*:(\d+)(?:[/?#]|$)/i.exec(publicUrl)?.[1] ?? null;
  return { hostname: url.hostname, port, prefix: url.pathname.replace(/\/+$/, "") };
}

/** The outcome of the last mail this instance tried to send, for GET /status. */
export interface LastSend {
  at: string;
  kind: string;
  ok: boolean;
  error?: string;
}
const lastSends = new WeakMap<AppContext, LastSend>();

/** GET /status's `email` component: `fail` while the last send failed. */
export function emailStatus(app: AppContext): { status: string } & Record<string, unknown> {
  const last = lastSends.get(app) ?? null;
  return { status: last && !last.ok ? "fail" : "ok", plugin: app.config.email_notification_plugin, last_send: last };
}

/** The 503 of a mail that could not be sent; `cause` is the plugin's error, named only to administrators. */
export class MailNotSent extends ServiceUnavailable {
  constructor(readonly failure: string) {
    super("emails", "The email could not be sent; try again later", "email-unavailable");
  }

  /** The same failure, naming its cause (the SMTP server's answer or the connection error). */
  named(): ServiceUnavailable {
    return new ServiceUnavailable("emails", `The email could not be sent: ${this.failure}`, "email-unavailable", {
      cause: this.failure,
    });
  }
}

/** For an administrator's action: a failed mail's 503 names its cause. */
export async function namingMailFailure<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (e) {
    throw e instanceof MailNotSent ? e.named() : e;
  }
}

function activePlugin(app: AppContext): EmailNotificationPlugin {
  const plugin = app.plugins.email.get(app.config.email_notification_plugin);
  if (!plugin)
    throw new ServiceUnavailable(
      "emails",
      `The email notification plugin "${app.config.email_notification_plugin}" is not loaded`,
    );
  return plugin;
}

async function send(app: AppContext, what: string, fn: (p: EmailNotificationPlugin) => Promise<void>): Promise<void> {
  const at = () => new Date().toISOString();
  try {
    await fn(activePlugin(app));
    lastSends.set(app, { at: at(), kind: what, ok: true });
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    lastSends.set(app, { at: at(), kind: what, ok: false, error });
    if (e instanceof ServiceUnavailable) throw e;
    app.log.error("email could not be sent", { kind: what, error });
    throw new MailNotSent(error);
  }
}

/** `public_url` for the templates' links, without its trailing slash. */
const withBase = <T extends ConnectionParams>(app: AppContext, ctx: T): T => ({
  ...ctx,
  public_url: ctx.public_url ?? app.config.public_url?.replace(/\/+$/, "") ?? "",
});

export const sendConfirmation = (app: AppContext, ctx: ConfirmationContext) =>
  send(app, "confirmation", (p) => p.sendConfirmation(withBase(app, ctx)));
export const sendPasswordReset = (app: AppContext, ctx: PasswordResetContext) =>
  send(app, "password_reset", (p) => p.sendPasswordReset(withBase(app, ctx)));

/** A notice to an administrator; false when the active plugin sends none (logged instead). */
export async function sendNotice(app: AppContext, ctx: NoticeContext): Promise<boolean> {
  const plugin = activePlugin(app);
  if (!plugin.sendNotice) {
    app.log.warn("the email plugin sends no notices", { subject: ctx.subject });
    return false;
  }
  await send(app, "notice", (p) => p.sendNotice!(ctx));
  return true;
}
