// The hosted pages of the OpenID Connect provider: server-rendered HTML (nunjucks, escaping on),
// plain forms that need no JavaScript. A page is one STEP (templates/oidc/<step>.html: the error
// page, the sign-in form, the second factor and the account page (mfa.html), the consent screen, the
// logout confirmation, "signed out", the device flow's verification steps) inside the LAYOUT
// (templates/oidc_page.html),
// which an operator may replace, for all tenants or per tenant (`oidc.login_page_template`,
// `oidc.tenant_login_page_templates`), as the email templates are replaced.
//
// What a layout cannot undo: the step's HTML (with its forms and CSRF field) is built here, escaped,
// and reaches the layout as one finished value; in a layout every value is escaped, `| safe`
// included (it escapes too); the headers are set here: no script (except, on a page with a passkey
// button, the provider's own same-origin scripts: assets/passkey.js over @simplewebauthn/browser),
// no resource but the page's own nonce-tagged style (and the QR code's data: image), no framing, no
// form target but this provider and the client's registered redirect URI.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { AppContext } from "../../boot/context.ts";
import { embeddedFile } from "../../boot/embedded.ts";
import { nunjucks, type Environment, type Template } from "../../services/templating.ts";
import { REFERENCE_LOCALE, textDirection, translate } from "../../services/i18n/catalogue.ts";
import { brandingFor } from "../../services/identity/branding.ts";
import { type LanguageLink, msg, type PageText, pageText, templateHelpers } from "./language.ts";
import type { UpstreamLink } from "./upstream-buttons.ts";

/** The pages' own templates, and operators' layouts, whose `safe` escapes like every other output. */
let environments: { builtin: Environment; layouts: Environment } | null = null;

function environment(kind: "builtin" | "layouts"): Environment {
  if (!environments) {
    const { Environment, runtime } = nunjucks();
    const layouts = new Environment(null, { autoescape: true, throwOnUndefined: false });
    // A plain string out of a filter is escaped by autoescape; only the page's own content is a SafeString.
    layouts.addFilter("safe", (value: unknown) => (value instanceof runtime.SafeString ? value : String(value ?? "")));
    environments = { builtin: new Environment(null, { autoescape: true, throwOnUndefined: false }), layouts };
  }
  return environments[kind];
}

const compiled = new Map<string, Template>();

function templateAt(path: string, kind: "builtin" | "layouts"): Template {
  const key = `${kind === "builtin" ? "b" : "l"}:${path}`;
  let t = compiled.get(key);
  if (!t) {
    // From the executable in a single-file build (scripts/build.ts carries templates/), else from disk.
    t = nunjucks().compile(embeddedFile(path) ?? readFileSync(path, "utf8"), environment(kind));
    compiled.set(key, t);
  }
  return t;
}

const stepPath = (step: string) => fileURLToPath(new URL(`../../../templates/oidc/${step}.html`, import.meta.url));

export type PageStep =
  | { step: "error"; message: PageText }
  | {
      step: "login";
      /**
       * `single`: one form asks the login name and the password; `identifier`: the login name alone
       * (home-realm discovery, web/flow/authorization.ts); `password`: the password for the name shown.
       */
      mode?: "single" | "identifier" | "password";
      /** The password step's way back to the identifier step ("not you?"). */
      changeHref?: string;
      clientName: string;
      hidden: Record<string, string>;
      message?: PageText;
      username?: string;
      /** The tenant's SAML domain: a second form starts the SAML flow. */
      samlDomain?: string | null;
      /** Offer passwordless passkey sign-in (web/passkey-sign-in.ts): the page loads its script. */
      passkeySignIn?: boolean;
      /** The upstream providers' buttons, as HTML escaped by web/pages/upstream-buttons.ts. */
      upstreamLinks?: UpstreamLink[];
    }
  | ({ step: "mfa" } & MfaContent)
  | { step: "consent"; clientName: string; userName: string; scopes: PageText[]; hidden: Record<string, string> }
  | { step: "logout"; clientName?: string; hidden: Record<string, string> }
  | {
      step: "signed_out";
      /** Front-Channel Logout 1.0 §3: each client's logout page, framed (hidden) on this page. */
      frames?: Array<{ src: string; name: string }>;
      /** The post-logout redirect, as a link when the frames must load first (no script to wait for them). */
      continueUrl?: string;
      clientName?: string;
    }
  // RFC 8628 §3.3: the device flow's verification page.
  | { step: "device_code"; message?: PageText; userCode?: string; uiLocales?: string }
  | {
      step: "device_confirm";
      clientName: string;
      userCode: string;
      /** What a third-party client asks, in words (consent.ts); empty for a first-party client. */
      scopes: PageText[];
      hidden: Record<string, string>;
      message?: PageText;
      username?: string;
      /** Single sign-on: the browser session's user, offered instead of the password form. */
      continueAs?: string;
      /** The same step with the password form (another account). */
      otherAccount?: string;
      /** The user has a TOTP factor: the password form also asks for a code (RFC 8176 `otp`). */
      askCode?: boolean;
    }
  | { step: "device_done"; heading: PageText; message: PageText }
  // The mailed links' pages (web/self-service.ts): a new password, an address confirmed.
  | {
      step: "password_reset";
      mode: "form" | "done" | "invalid";
      userName?: string;
      rules: PageText[];
      hidden: Record<string, string>;
      message?: PageText;
    }
  | { step: "email_confirm"; mode: "form" | "done" | "invalid"; address?: string; hidden: Record<string, string> }
  // Self-registration (`enabled_http_plugins.user_registration`), as POST /0.1/users/register.
  | {
      step: "register";
      mode: "form" | "done" | "disabled";
      rules: PageText[];
      hidden: Record<string, string>;
      message?: PageText;
      username?: string;
      address?: string;
    };

/**
 * The second step of a sign-in and the account page (web/flow/second-step.ts, web/account.ts): one
 * template, by `mode` — `verify` (a code form, a passkey button), `enrol` (TOTP QR code and
 * confirmation), `codes` (recovery codes, shown once), `account-login`, `account` (the settings),
 * `password` (a new password the administrator required).
 */
export interface MfaContent {
  title: PageText;
  mode: "verify" | "enrol" | "codes" | "account" | "account-login" | "password";
  /** The form target (relative to the issuer) and its passkey options' target. */
  action: string;
  optionsAction?: string;
  hidden: Record<string, string>;
  message?: PageText;
  notice?: PageText;
  hasCode?: boolean;
  hasPasskey?: boolean;
  qrCode?: string;
  secret?: string;
  recoveryCodes?: string[];
  /** What the account page shows. */
  extra?: Record<string, unknown>;
}

/** Whether the page carries a passkey button, hence the provider's same-origin scripts. */
function passkeyScripts(page: PageStep): boolean {
  if (page.step === "login") return page.passkeySignIn ?? false;
  if (page.step === "mfa") return Boolean(page.hasPasskey || page.mode === "account");
  return false;
}

/**
 * Form targets, relative to the issuer's directory (the pages are served at `{issuer}/…`); on a page
 * rendered at a nested path (`{issuer}/authorize/saml`, `{issuer}/authorize/consent`) they are
 * prefixed by `../` per level (`relativeBase`), so they resolve from the page's own URL whatever
 * prefix the deployment serves the issuer under (`public_url`, `X-Script-Name`).
 */
const ACTIONS = {
  action: "authorize",
  saml_action: "authorize/saml",
  consent: "authorize/consent",
  logout: "logout",
  device: "device",
};

function title(page: PageStep): PageText {
  switch (page.step) {
    case "error":
      return "title.error";
    case "login":
      return msg("title.login", { client: page.clientName });
    case "consent":
      return msg("title.consent", { client: page.clientName });
    case "logout":
      return "title.logout";
    case "signed_out":
      return "title.signed_out";
    case "device_code":
    case "device_confirm":
      return "title.device";
    case "device_done":
      return page.heading;
    case "mfa":
      return page.title;
    case "password_reset":
      return page.mode === "done" ? "reset.done_title" : "reset.title";
    case "email_confirm":
      return page.mode === "done" ? "confirm.done_title" : "confirm.title";
    case "register":
      return page.mode === "done" ? "register.done_title" : "register.title";
  }
}

/** The way back to the issuer's directory from the page at `path` (the request's path): `""`, `"../"`… */
export function relativeBase(path: string | undefined): string {
  if (!path) return "";
  const at = path.indexOf(OIDC_DIR);
  if (at < 0) return "";
  const depth = path.slice(at + OIDC_DIR.length).split("/").length - 1;
  return "../".repeat(depth);
}

const OIDC_DIR = "/0.1/oidc/";

/** A page target under the issuer, from the page's `base`; an absolute URL or path is kept. */
const under = (base: string, target: string) =>
  /^([a-z][a-z0-9+.-]*:|\/)/i.test(target) ? target : `${base}${target}`;

function stepContext(page: PageStep, base: string): Record<string, unknown> {
  const at = (target: string) => under(base, target);
  switch (page.step) {
    case "error":
      return { message: page.message };
    case "login":
      return {
        client_name: page.clientName,
        hidden: page.hidden,
        message: page.message ?? "",
        username: page.username ?? "",
        mode: page.mode ?? "single",
        change_href: page.changeHref ?? "",
        saml_domain: page.samlDomain ?? "",
        action: at(ACTIONS.action),
        saml_action: at(ACTIONS.saml_action),
        passkey_sign_in: page.passkeySignIn ?? false,
        scripts: passkeyScripts(page),
        upstream_links: page.upstreamLinks ?? [],
      };
    case "consent":
      return {
        client_name: page.clientName,
        user_name: page.userName,
        scopes: page.scopes,
        hidden: page.hidden,
        action: at(ACTIONS.consent),
      };
    case "logout":
      return { client_name: page.clientName ?? "", hidden: page.hidden, action: at(ACTIONS.logout) };
    case "signed_out":
      return { frames: page.frames ?? [], continue_url: page.continueUrl ?? "", client_name: page.clientName ?? "" };
    case "device_code":
      return {
        message: page.message ?? "",
        user_code: page.userCode ?? "",
        ui_locales: page.uiLocales ?? "",
        action: at(ACTIONS.device),
      };
    case "device_confirm":
      return {
        client_name: page.clientName,
        user_code: page.userCode,
        scopes: page.scopes,
        hidden: page.hidden,
        message: page.message ?? "",
        username: page.username ?? "",
        continue_as: page.continueAs ?? "",
        other_account: page.otherAccount ? at(page.otherAccount) : "",
        ask_code: page.askCode ?? false,
        action: at(ACTIONS.device),
      };
    case "device_done":
      return { heading: page.heading, message: page.message };
    case "password_reset":
      return {
        mode: page.mode,
        user_name: page.userName ?? "",
        rules: page.rules,
        hidden: page.hidden,
        message: page.message ?? "",
        action: at("password-reset"),
      };
    case "email_confirm":
      return { mode: page.mode, address: page.address ?? "", hidden: page.hidden, action: at("email-confirmation") };
    case "register":
      return {
        mode: page.mode,
        rules: page.rules,
        hidden: page.hidden,
        message: page.message ?? "",
        username: page.username ?? "",
        address: page.address ?? "",
        action: at("sign-up"),
      };
    case "mfa":
      return {
        title: page.title,
        mode: page.mode,
        message: page.message ?? "",
        notice: page.notice ?? "",
        action: at(page.action),
        options_action: page.optionsAction ? at(page.optionsAction) : "",
        hidden: page.hidden,
        has_code: page.hasCode ?? false,
        has_passkey: page.hasPasskey ?? false,
        qr_code: page.qrCode ?? "",
        secret: page.secret ?? "",
        recovery_codes: page.recoveryCodes ?? [],
        scripts: passkeyScripts(page),
        ...(page.extra ?? {}),
      };
  }
}

/** The layout for a client of `tenantUuid`: the tenant's own, else the configured one. */
function layoutFor(app: AppContext, tenantUuid: string | undefined): Template {
  const { login_page_template: path, tenant_login_page_templates: byTenant } = app.config.oidc;
  const own = tenantUuid ? byTenant[tenantUuid] : undefined;
  return templateAt(own ?? path, "layouts");
}

export interface PageOptions {
  /** The client's tenant: its layout, when it has one. */
  tenantUuid?: string;
  /** Where the page's forms may lead, their answers' redirects included (CSP form-action): the client's redirect URI, the SAML IdP. */
  formTargets?: string[];
  /** The request's path: the page's relative targets are computed from its depth under the issuer. */
  path?: string;
  /** Extra headers (Set-Cookie). */
  headers?: Headers;
  /** What the page may frame (CSP frame-src): the front-channel logout URIs of the signed-out page. */
  frameTargets?: string[];
  /** The page's language (web/pages/language.ts); the reference language when none. */
  locale?: string;
  /** The language switcher's links (a page answering a GET). */
  languages?: LanguageLink[];
}

export function renderPage(app: AppContext, page: PageStep, status: number, opts: PageOptions = {}): Response {
  const base = relativeBase(opts.path);
  const nonce = randomBytes(16).toString("base64");
  const locale = opts.locale ?? REFERENCE_LOCALE;
  const brand = brandingFor(app, opts.tenantUuid);
  const content = new (nunjucks().runtime.SafeString)(
    templateAt(stepPath(page.step), "builtin").render({ base, ...stepContext(page, base), ...templateHelpers(locale) }),
  );
  // What a layout receives: plain values only (a layout escapes everything), in the page's language.
  const context = {
    title: pageText(locale, title(page)),
    content,
    step: page.step,
    client_name: "clientName" in page ? (page.clientName ?? "") : "",
    style_nonce: nonce,
    lang: locale,
    dir: textDirection(locale),
    languages: opts.languages ?? [],
    languages_label: translate(locale, "language.switcher"),
    // The tenant's branding (services/identity/branding.ts): `#rrggbb` colours and an inline image only.
    brand: brand
      ? {
          product_name: brand.productName ?? "",
          logo: brand.logo ?? "",
          primary: brand.primary ?? "",
          background: brand.background ?? "",
          text: brand.text ?? "",
        }
      : null,
  };
  let html: string;
  try {
    html = layoutFor(app, opts.tenantUuid).render(context);
  } catch (e) {
    // A broken operator layout must not take the sign-in down: the built-in one is used, and said so.
    app.log.error("OIDC page layout failed; the built-in layout is used", { error: (e as Error).message });
    html = templateAt(fileURLToPath(new URL("../../../templates/oidc_page.html", import.meta.url)), "layouts").render(
      context,
    );
  }
  const formAction = ["'self'", ...(opts.formTargets ?? []).map(cspSource)].join(" ");
  // Scripts only on a page with a passkey button: the provider's own files (no inline script), and
  // the fetch of the ceremony's options; the QR code of a TOTP enrolment is a data: image.
  const scripts = passkeyScripts(page) ? " script-src 'self'; connect-src 'self';" : "";
  const images = (page.step === "mfa" && page.qrCode) || brand?.logo ? " img-src data:;" : "";
  // Front-Channel Logout §3: exactly the origins of the frames the page holds, nothing else.
  const frameOrigins = [...new Set((opts.frameTargets ?? []).map((u) => new URL(u).origin))];
  const frames = frameOrigins.length ? ` frame-src ${frameOrigins.join(" ")};` : "";
  const headers = new Headers({
    "Content-Type": "text/html; charset=utf-8",
    "Content-Security-Policy": `default-src 'none'; style-src 'nonce-${nonce}';${images}${scripts}${frames} form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
  });
  for (const [k, v] of opts.headers ?? []) headers.append(k, v);
  return new Response(html, { status, headers });
}

/** A CSP source for a redirect URI: the URI itself for http(s), its scheme for a native app's (RFC 8252 §7.1). */
function cspSource(uri: string): string {
  const url = new URL(uri);
  if (url.protocol === "https:" || url.protocol === "http:")
    return `${url.origin}${url.pathname}`.replace(/[;,\s]/g, encodeURIComponent);
  return url.protocol;
}
