// The second step of the hosted login page (issue 25; passwordless sign-in: web/passkey-sign-in.ts). After
// a password accepted for a user with a factor (MfaRequired from the login), `beginStep` keeps a
// pending sign-in and asks for a code (plain form) or a passkey (same-origin script); a user whose
// tenant requires MFA and who has none enrols TOTP first (QR code, confirming code, recovery codes
// shown once). Every form carries the CSRF token of the login page (double-submit cookie) and the
// authorization request, checked again at each step (OIDC Core §3.1.2.1). Once the factor is proven,
// the step hands it to its `Flow`: an authorization's (flow/authorization.ts oidcFlow: the browser
// session with the factors used, RFC 8176 `amr`, consent, the code) or the account page's. The pages
// are a step (`mfa`) of the provider's page system (web/pages/oidc-login.ts): the tenant's layout
// applies. A user whose administrator required a new password chooses it here too, last
// (docs/security.md).
import type { Context } from "hono";
import type { AppContext } from "../../boot/context.ts";
import { ApiError, type MfaRequired, SecondFactorLocked } from "../../domain/errors.ts";
import type { Env } from "../../http/route.ts";
import type { MfaContent, PageOptions } from "../pages/oidc-login.ts";
import {
  confirmEnrolment,
  loadPending,
  passkeyOptions,
  setNewPassword,
  startEnrolment,
  startPendingSignIn,
  takeProven,
  verifyCode,
  verifyPasskey,
  type Pending,
  type Proven,
} from "../../services/oidc/mfa-sign-in.ts";
import { browserOrigin, csrfCookie, SECOND_FACTOR_LOCKED, page, type Params, UNAVAILABLE } from "../pages/browser.ts";
import { requestRp } from "../../http/public-urls.ts";
import type { PageText } from "../pages/language.ts";
import { passwordRefusalText, passwordRules } from "../pages/password-rules.ts";
import { vouchedByIdentityProvider } from "../../services/auth/vouched.ts";

/** The form action of an authorization's second step (web/second-step.ts). */
export const STEP_ACTION = "authorize-mfa";
export const OPTIONS_ACTION = "passkey-options";
// Catalogue keys (templates/locales/*.json).
const TITLE = "mfa.title";
const EXPIRED = "mfa.expired";
const WRONG_CODE = "mfa.wrong_code";
const WRONG_PASSKEY = "mfa.wrong_passkey";
const PASSWORDS_DIFFER = "password.differ";

/**
 * Where a second step leads: the authorization request's continuation for an OpenID Connect client,
 * or the account page's session (web/account.ts). `hidden` carries what each form must post back.
 */
export interface Flow {
  clientId: string | null;
  action: string;
  optionsAction: string;
  hidden: Record<string, string>;
  /** The layout's tenant and the CSP's form targets. */
  pageOptions: Omit<PageOptions, "headers">;
  finish(done: Proven, login: string): Promise<Response>;
}

/** The browser a pending sign-in belongs to: its CSRF cookie (the step's forms carry the same value). */
const binding = (c: Context<Env>, flow: Flow) => ({
  browser: csrfCookie(c, c.get("app")) ?? "",
  clientId: flow.clientId,
});

export function stepPage(
  c: Context<Env>,
  app: AppContext,
  flow: Flow,
  content: Omit<MfaContent, "action" | "optionsAction" | "hidden">,
  status: number,
  pending?: Pending,
): Response {
  return page(
    c,
    app,
    {
      step: "mfa",
      ...content,
      action: flow.action,
      optionsAction: flow.optionsAction,
      hidden: pending ? { ...flow.hidden, pending: pending.handle } : flow.hidden,
    },
    status,
    // The user is known from here on: their own language, after the request's ui_locales.
    { ...flow.pageOptions, userLocale: pending?.user.locale },
  );
}

const verifyPage = (c: Context<Env>, app: AppContext, flow: Flow, p: Pending, message: PageText, status: number) =>
  stepPage(
    c,
    app,
    flow,
    {
      title: TITLE,
      mode: "verify",
      message,
      hasCode: p.methods.includes("totp"),
      hasPasskey: p.methods.includes("passkey"),
    },
    status,
    p,
  );

async function enrolPage(c: Context<Env>, app: AppContext, flow: Flow, p: Pending, message: PageText) {
  const enrolment = await startEnrolment(app, p);
  return stepPage(
    c,
    app,
    flow,
    {
      title: "mfa.title_enrol",
      mode: "enrol",
      message,
      qrCode: enrolment.qr_code,
      secret: enrolment.secret,
    },
    message ? 400 : 200,
    p,
  );
}

/** The new password an administrator required, with the rules that apply to this user (their tenant's). */
const passwordPage = async (c: Context<Env>, app: AppContext, flow: Flow, p: Pending, message: PageText) =>
  stepPage(
    c,
    app,
    flow,
    {
      title: "password.title",
      mode: "password",
      message,
      extra: { rules: await passwordRules(app, p.user.tenantUuid) },
    },
    message ? 400 : 200,
    p,
  );

/** What a step proved, once the user who must change its password has chosen a new one (a `password` stage). */
async function afterPasswordChange(c: Context<Env>, app: AppContext, flow: Flow, done: Proven): Promise<Response> {
  const handle = await startPendingSignIn(app, done.proven, "password", binding(c, flow), done.amr);
  const p = await loadPending(app, handle, binding(c, flow));
  return p ? passwordPage(c, app, flow, p, "") : fatal(c, app, EXPIRED, 400);
}

export const fatal = (c: Context<Env>, app: AppContext, message: PageText, status: number) =>
  page(c, app, { step: "error", message }, status);

/** After a password accepted for a user with a factor (or who must enrol one): the step's first page. */
export async function beginStep(
  c: Context<Env>,
  app: AppContext,
  flow: Flow,
  e: MfaRequired,
  /** How the first step authenticated (RFC 8176 §2): `pwd`, or `saml`/`oidc` after the tenant's identity provider. */
  firstFactor: string[] = ["pwd"],
  /** Told the step's stored row (its key and expiry): what the first step leaves waiting for the step's end. */
  onPending?: (stepHash: string, expiresAt: Date) => Promise<void>,
): Promise<Response> {
  const stage = e.changePassword ? "password" : e.enrol ? "enrol" : "verify";
  const handle = await startPendingSignIn(app, e.proven!, stage, binding(c, flow), firstFactor);
  const p = await loadPending(app, handle, binding(c, flow));
  if (!p) return fatal(c, app, EXPIRED, 400);
  await onPending?.(p.row.handleHash, p.row.expiresAt);
  if (stage === "password") return passwordPage(c, app, flow, p, "");
  return e.enrol ? enrolPage(c, app, flow, p, "") : verifyPage(c, app, flow, p, "", 200);
}

/** Refusals as the login page shows them: throttled (429), outage (503), else the step's own message. */
export function refusal(
  c: Context<Env>,
  app: AppContext,
  e: unknown,
  otherwise: () => Promise<Response>,
): Promise<Response> {
  if (!(e instanceof ApiError)) throw e;
  if (e instanceof SecondFactorLocked) return Promise.resolve(fatal(c, app, SECOND_FACTOR_LOCKED, 429));
  if (e.status === 429) return Promise.resolve(fatal(c, app, "error.too_many_sign_in_again", 429));
  if (e.status >= 500) return Promise.resolve(fatal(c, app, UNAVAILABLE, 503));
  return otherwise();
}

/** One submission of a step's form (`step`: none = a code, `passkey`, `confirm`, `finish`). */
export async function runStep(c: Context<Env>, app: AppContext, flow: Flow, params: Params): Promise<Response> {
  const p = await loadPending(app, params.pending, binding(c, flow));
  if (!p) return fatal(c, app, EXPIRED, 400);
  const origin = browserOrigin(c, app);
  const finish = async (done: Proven | null) => {
    if (!done) return fatal(c, app, EXPIRED, 400);
    // The second factor first, then the new password the administrator required (never a token before);
    // not after SAML or an upstream OpenID provider: no password was typed here (services/auth/vouched.ts).
    const passwordDue = p.user.passwordChangeRequired && !vouchedByIdentityProvider(p.row.amr);
    if (passwordDue && p.row.stage !== "password") return afterPasswordChange(c, app, flow, done);
    return flow.finish(done, p.row.login);
  };
  try {
    if (params.step === "finish") return await finish(await takeProven(app, p, null));
    if (p.row.stage === "password") {
      if (!params.new_password || params.new_password !== params.confirm_password)
        return passwordPage(c, app, flow, p, PASSWORDS_DIFFER);
      return await finish(await setNewPassword(app, p, params.new_password, origin));
    }
    if (params.step === "confirm") {
      const codes = await confirmEnrolment(app, p, params.code ?? "", origin);
      return stepPage(
        c,
        app,
        flow,
        {
          title: "mfa.title_codes",
          mode: "codes",
          notice: "mfa.on",
          recoveryCodes: codes,
        },
        200,
        p,
      );
    }
    const amr =
      params.step === "passkey"
        ? await verifyPasskey(
            app,
            p,
            requestRp(c, app),
            params.challenge_id ?? "",
            parseJson(params.credential),
            origin,
          )
        : await verifyCode(app, p, params.code ?? "", origin);
    if (!amr) return verifyPage(c, app, flow, p, params.step === "passkey" ? WRONG_PASSKEY : WRONG_CODE, 401);
    return await finish(await takeProven(app, p, amr));
  } catch (e) {
    return refusal(c, app, e, () =>
      p.row.stage === "password"
        ? // the password rules' refusal (400), in the page's words
          passwordPage(c, app, flow, p, passwordRefusalText(e) ?? (e as ApiError).message)
        : p.row.stage === "enrol"
          ? enrolPage(c, app, flow, p, WRONG_CODE)
          : Promise.resolve(verifyPage(c, app, flow, p, WRONG_CODE, 401)),
    );
  }
}

/** Passkey options of a pending second step (the account page's sign-in and the login page). */
export async function stepPasskeyOptions(c: Context<Env>, app: AppContext, flow: Flow, params: Params) {
  const p = await loadPending(app, params.pending, binding(c, flow));
  if (p?.row.stage !== "verify") return c.json({ error: "invalid_request" }, 400);
  return c.json(await passkeyOptions(app, requestRp(c, app), p));
}

export function parseJson(value: string | undefined): unknown {
  try {
    return JSON.parse(value ?? "null");
  } catch {
    return null;
  }
}
