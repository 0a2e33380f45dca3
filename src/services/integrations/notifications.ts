// Emails sent to users: the template formatter (nunjucks, so wazo-auth's Jinja templates work as
// they are) and the calls to the active email notification plugin.
import { readFileSync } from "node:fs";
import type { AppContext } from "../../boot/context.ts";
import { ServiceUnavailable } from "../../domain/errors.ts";
import type {
  ConfirmationContext,
  ConnectionParams,
  EmailNotificationPlugin,
  PasswordResetContext,
  TemplateFormatter,
} from "../../plugins/email-types.ts";
import { embeddedFile } from "../../boot/embedded.ts";
import { nunjucks, type Environment, type Template } from "../templating.ts";

let env: Environment | null = null;

const formatters = new WeakMap<object, TemplateFormatter>();

/** Templates are read once per configuration, from the paths it names. */
export function templateFormatter(config: AppContext["config"]): TemplateFormatter {
  let formatter = formatters.get(config);
  if (!formatter) formatters.set(config, (formatter = newFormatter(config)));
  return formatter;
}

function newFormatter(config: AppContext["config"]): TemplateFormatter {
  const paths = {
    email_confirmation: config.email_confirmation_template,
    email_confirmation_subject: config.email_confirmation_subject_template,
    email_confirmation_get_body: config.email_confirmation_get_response_body_template,
    password_reset_email: config.password_reset_email_template,
    password_reset_email_subject: config.password_reset_email_subject_template,
  };
  const compiled = new Map<string, Template>();
  return {
    render(name, context) {
      let template = compiled.get(name);
      if (!template) {
        env ??= new (nunjucks().Environment)(null, { autoescape: false, throwOnUndefined: false });
        template = nunjucks().compile(embeddedFile(paths[name]) ?? readFileSync(paths[name], "utf8"), env);
        compiled.set(name, template);
      }
      return template.render(context as object);
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
  try {
    await fn(activePlugin(app));
  } catch (e) {
    if (e instanceof ServiceUnavailable) throw e;
    app.log.error("email could not be sent", { kind: what, error: (e as Error).message });
    throw new ServiceUnavailable("emails", "The email could not be sent; try again later", "email-unavailable");
  }
}

export const sendConfirmation = (app: AppContext, ctx: ConfirmationContext) =>
  send(app, "confirmation", (p) => p.sendConfirmation(ctx));
export const sendPasswordReset = (app: AppContext, ctx: PasswordResetContext) =>
  send(app, "password_reset", (p) => p.sendPasswordReset(ctx));
