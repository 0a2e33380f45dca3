// The authorization endpoint and its hosted pages (OIDC Core §3.1.2, RFC 6749 §4.1.1). One
// authorization goes through STEPS, each a page of its own that posts back here:
//   1. sign-in: the browser session (single sign-on, §3.1.2.3) when there is a usable one, else the
//      password form (POST /oidc/authorize) or the tenant's SAML IdP (POST /oidc/authorize/saml,
//      back at GET /oidc/authorize/saml); for a user with a second factor, the password is followed
//      by the MFA step (routes/mfa-step.ts, POST /oidc/authorize-mfa), and a passkey alone may sign
//      in where the tenant allows it (routes/passkey-sign-in.ts); every sign-in then starts the
//      browser session (continueSignIn) with the factors used (RFC 8176 `amr`);
//   2. consent (§3.1.2.4) for a third-party client (POST /oidc/authorize/consent);
//   3. the code, back to the client (§3.1.2.5).
// `prompt=none` never shows a page: it answers `login_required` / `consent_required` (§3.1.2.6).
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import type { AppContext } from "../context.ts";
import { ApiError, AuthenticationFailed, MfaRequired } from "../domain/errors.ts";
import { RouteGroup, queryObject, type Env } from "../http/route.ts";
import { tenantAllowsPasswordless } from "../services/auth/mfa-policy.ts";
import { beginSamlLogin } from "../services/integrations/saml/saml-login.ts";
import { samlConfigForDomain, samlDomainOfTenant } from "../services/integrations/saml/saml-config.ts";
import {
  authorizationRedirect,
  checkAuthorizationRequest,
  REQUEST_PARAMS,
  type AuthorizationRequest,
  type AuthorizeCheck,
} from "../services/oidc/authorize.ts";
import {
  BROWSER_SESSION_COOKIE,
  findBrowserSession,
  sessionUserName,
  startBrowserSession,
  type BrowserSessionRow,
} from "../services/oidc/browser-session.ts";
import type { ClientRow } from "../services/oidc/clients.ts";
import { describeScope, rememberConsent, scopesNeedingConsent } from "../services/oidc/consent.ts";
import {
  discardSignIn,
  issueCode,
  loginNameOf,
  passwordSignIn,
  samlSignIn,
  sessionSignIn,
  type SignedIn,
} from "../services/oidc/sign-in.ts";
import { users } from "../db/schema.ts";
import { eq } from "drizzle-orm";
import { requestIssuer } from "./oidc.ts";
import {
  browserOrigin,
  browserSessionFor,
  clearCookie,
  cookieOptions,
  CSRF_REFUSED,
  csrfMatches,
  csrfToken,
  GENERIC_FAILURE,
  hiddenFields,
  outagePage,
  page,
  redirectTo,
  signInRefusal,
  stringParams,
  UNAVAILABLE,
  type Params,
} from "./oidc-pages.ts";

const SAML_COOKIE = "tessera_oidc_saml";

export type Ok = Extract<AuthorizeCheck, { kind: "ok" }>;
type Session = BrowserSessionRow & { tenantUuid: string };

/** What the MFA step (routes/mfa-step.ts) adds to the password form, wired by app.ts. */
export interface AuthorizeHooks {
  /** The password was right and a second factor is due (or must be enrolled): the step's page. */
  secondStep?: (c: Context<Env>, app: AppContext, check: Ok, params: Params, e: MfaRequired) => Promise<Response>;
}

export function answerCheck(
  c: Context<Env>,
  app: AppContext,
  check: Exclude<AuthorizeCheck, { kind: "ok" }>,
): Response {
  if (check.kind === "page_error") return page(c, app, { step: "error", message: check.message }, 400);
  return redirectBack(
    c,
    app,
    check.redirectUri,
    { error: check.error, error_description: check.description },
    check.state,
  );
}

/** RFC 6749 §4.1.2 / §4.1.2.1: back to the client, with `state` and RFC 9207's `iss`. */
function redirectBack(
  c: Context<Env>,
  app: AppContext,
  redirectUri: string,
  params: Record<string, string>,
  state: string | null,
): Response {
  return redirectTo(c, authorizationRedirect(redirectUri, { ...params, state, iss: requestIssuer(c, app) }));
}

export async function loginForm(
  c: Context<Env>,
  app: AppContext,
  { client, request }: Ok,
  params: Params,
  extra: { message?: string; username?: string; status?: number } = {},
): Promise<Response> {
  const domain = await samlDomainOfTenant(app, client.tenantUuid);
  const saml = domain ? await samlConfigForDomain(app, domain) : null;
  // Passwordless passkey sign-in (routes/passkey-sign-in.ts) where the client's tenant allows it.
  const passkeySignIn = await tenantAllowsPasswordless(app, client.tenantUuid);
  return page(
    c,
    app,
    {
      step: "login",
      clientName: client.name,
      hidden: hiddenFields(params, REQUEST_PARAMS, await csrfToken(c, app)),
      message: extra.message,
      username: extra.username,
      samlDomain: saml ? domain : null,
      passkeySignIn,
    },
    extra.status ?? 200,
    { tenantUuid: client.tenantUuid, formTargets: [request.redirectUri, ...(saml ? [saml.idp.ssoUrl] : [])] },
  );
}

/** The browser session, when it may stand for this sign-in (OIDC Core §3.1.2.1 prompt, max_age; the client's tenant). */
async function usableSession(c: Context<Env>, app: AppContext, { client, request }: Ok): Promise<Session | null> {
  if (request.prompt.includes("login") || request.prompt.includes("select_account")) return null;
  return browserSessionFor(c, app, client.tenantUuid, request.maxAge);
}

/**
 * After the sign-in step: consent when the client needs it, then the code. `signedIn` is the token
 * the sign-in just issued (the password form, SAML); single sign-on issues one here.
 */
async function afterSignIn(
  c: Context<Env>,
  app: AppContext,
  ok: Ok,
  params: Params,
  session: Session,
  signedIn: SignedIn | null,
): Promise<Response> {
  const { client, request } = ok;
  const missing = await scopesNeedingConsent(app, client, session.userUuid, request.scope, request.prompt);
  if (missing.length) {
    // Issued before the user allowed anything: not kept (the consent step issues its own).
    if (signedIn) await discardSignIn(app, signedIn, "awaiting consent");
    if (request.prompt.includes("none"))
      return redirectBack(
        c,
        app,
        request.redirectUri,
        { error: "consent_required", error_description: "the user has not consented" },
        request.state,
      );
    return consentPage(c, app, ok, params, session);
  }
  return issueAndRedirect(c, app, client, request, session, params, signedIn);
}

async function consentPage(
  c: Context<Env>,
  app: AppContext,
  { client, request }: Ok,
  params: Params,
  session: Session,
) {
  return page(
    c,
    app,
    {
      step: "consent",
      clientName: client.name,
      userName: await sessionUserName(app, session),
      scopes: request.scope.map(describeScope),
      hidden: hiddenFields(params, REQUEST_PARAMS, await csrfToken(c, app)),
    },
    200,
    { tenantUuid: client.tenantUuid, formTargets: [request.redirectUri] },
  );
}

async function issueAndRedirect(
  c: Context<Env>,
  app: AppContext,
  client: ClientRow,
  request: AuthorizationRequest,
  session: Session,
  params: Params,
  signedIn: SignedIn | null,
): Promise<Response> {
  let token = signedIn;
  if (!token) {
    try {
      token = await sessionSignIn(app, client, request.scope, session, browserOrigin(c, app));
    } catch (e) {
      if (!(e instanceof AuthenticationFailed)) throw e;
      // The session's login no longer names its user (renamed, method changed): sign in again.
      clearCookie(c, app, BROWSER_SESSION_COOKIE);
      if (request.prompt.includes("none"))
        return redirectBack(
          c,
          app,
          request.redirectUri,
          { error: "login_required", error_description: "the user is not signed in" },
          request.state,
        );
      const check = await checkAuthorizationRequest(app, params);
      return check.kind === "ok" ? loginForm(c, app, check, params) : answerCheck(c, app, check);
    }
  }
  // The GRANTED scope (offline_access only with consent, consent.ts) is what the token endpoint reads.
  const code = await issueCode(
    app,
    client,
    request,
    token,
    { authTime: session.authTime, amr: session.amr, browserSessionId: session.id },
    request.scope,
  );
  return redirectBack(c, app, request.redirectUri, { code }, request.state);
}

/**
 * A user has just authenticated (password, password and second factor, passkey, SAML): the browser
 * session with the factors used (RFC 8176 `amr`), then consent and the code.
 */
export async function continueSignIn(
  c: Context<Env>,
  app: AppContext,
  ok: Ok,
  params: Params,
  signedIn: SignedIn,
  login: string,
  amr: string[],
): Promise<Response> {
  const session = await newSession(c, app, signedIn, login, amr);
  return afterSignIn(c, app, ok, params, session, signedIn);
}

/** A new browser session for a user who just authenticated; the cookie replaces any previous one. */
async function newSession(
  c: Context<Env>,
  app: AppContext,
  signedIn: SignedIn,
  login: string,
  amr: string[],
): Promise<Session> {
  const previous = await findBrowserSession(app, getCookie(c, BROWSER_SESSION_COOKIE));
  const { cookie, session } = await startBrowserSession(
    app,
    { userUuid: signedIn.userUuid, login, authTime: Math.floor(Date.now() / 1000), amr },
    previous,
  );
  setCookie(c, BROWSER_SESSION_COOKIE, cookie, cookieOptions(c, app, app.config.oidc.browser_session_lifetime));
  const [user] = await app.db
    .select({ tenantUuid: users.tenantUuid })
    .from(users)
    .where(eq(users.uuid, signedIn.userUuid));
  return { ...session, tenantUuid: user?.tenantUuid ?? "" };
}

async function showAuthorize(c: Context<Env>, app: AppContext): Promise<Response> {
  const params = stringParams(queryObject(c));
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const session = await usableSession(c, app, check);
  if (session) return afterSignIn(c, app, check, params, session, null);
  // OIDC Core §3.1.2.6: prompt=none never shows a page.
  if (check.request.prompt.includes("none"))
    return redirectBack(
      c,
      app,
      check.request.redirectUri,
      { error: "login_required", error_description: "the user is not signed in" },
      check.request.state,
    );
  return loginForm(c, app, check, params);
}

async function submitPassword(
  c: Context<Env>,
  app: AppContext,
  body: Record<string, unknown>,
  hooks: AuthorizeHooks,
): Promise<Response> {
  const params = stringParams(body);
  if (!(await csrfMatches(c, app, params.csrf_token)))
    return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const again = (message: string, status: number) =>
    loginForm(c, app, check, params, { message, username: params.username ?? "", status });
  if (!params.username || !params.password) return again(GENERIC_FAILURE, 401);
  let signedIn: Awaited<ReturnType<typeof passwordSignIn>>;
  try {
    signedIn = await passwordSignIn(app, check.client, check.request.scope, {
      login: params.username,
      password: params.password,
      ...browserOrigin(c, app),
    });
  } catch (e) {
    // The password was right; a second factor is due (routes/mfa-step.ts), then continueSignIn.
    if (e instanceof MfaRequired && e.proven && hooks.secondStep) return hooks.secondStep(c, app, check, params, e);
    const refused = signInRefusal(e);
    return again(refused.message, refused.status);
  }
  // RFC 8176 §2 `pwd` (with `otp mfa` when a code was appended to the password).
  return continueSignIn(c, app, check, params, signedIn, params.username, signedIn.amr);
}

async function submitConsent(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  if (!(await csrfMatches(c, app, params.csrf_token)))
    return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const { client, request } = check;
  const session = await browserSessionFor(c, app, client.tenantUuid, null);
  // The session ended meanwhile (logout elsewhere, expiry) or is not one this client may use: sign in again.
  if (!session) return loginForm(c, app, check, params);
  if (params.decision !== "allow")
    // OIDC Core §3.1.2.6 / RFC 6749 §4.1.2.1: the user refused.
    return redirectBack(
      c,
      app,
      request.redirectUri,
      { error: "access_denied", error_description: "the user denied the request" },
      request.state,
    );
  await rememberConsent(app, session.userUuid, client.clientId, request.scope);
  return issueAndRedirect(c, app, client, request, session, params, null);
}

/** The login page's SAML button: off to the tenant's IdP, back at GET /oidc/authorize/saml with the request. */
async function startSaml(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  if (!(await csrfMatches(c, app, params.csrf_token)))
    return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const domain = await samlDomainOfTenant(app, check.client.tenantUuid);
  if (!domain)
    return page(c, app, { step: "error", message: "Single sign-on is not configured for this application." }, 400);
  const back = new URL(`${requestIssuer(c, app)}/authorize/saml`);
  for (const name of REQUEST_PARAMS) if (params[name] !== undefined) back.searchParams.set(name, params[name]!);
  const { location, saml_session_id } = await beginSamlLogin(app, back.toString(), domain);
  // The SAML session is this browser's: a link to the return URL alone signs nobody in.
  setCookie(c, SAML_COOKIE, saml_session_id, cookieOptions(c, app, app.config.saml.saml_login_timeout_seconds));
  return redirectTo(c, location);
}

async function finishSaml(c: Context<Env>, app: AppContext): Promise<Response> {
  const params = stringParams(queryObject(c));
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const samlSessionId = getCookie(c, SAML_COOKIE);
  clearCookie(c, app, SAML_COOKIE);
  const failed = () =>
    loginForm(c, app, check, params, { message: "Single sign-on did not succeed. Try again.", status: 401 });
  if (!samlSessionId || params.login_failure_code !== undefined) return failed();
  let signedIn: SignedIn;
  try {
    signedIn = await samlSignIn(app, check.client, check.request.scope, samlSessionId, browserOrigin(c, app));
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    if (e.status >= 500) return page(c, app, { step: "error", message: UNAVAILABLE }, 503);
    return failed();
  }
  const login = await loginNameOf(app, signedIn.userUuid);
  if (!login) {
    await discardSignIn(app, signedIn, "no login name");
    return failed();
  }
  // `saml`: authenticated by the tenant's SAML identity provider (not an RFC 8176 value; documented).
  return continueSignIn(c, app, check, params, signedIn, login, ["saml"]);
}

const formBody = z.record(z.string(), z.unknown());
const html = (description: string) => ({ description, contentType: "text/html" });

export function oidcAuthorizeRoutes(hooks: AuthorizeHooks = {}): RouteGroup {
  return new RouteGroup("oidc", "page")
    .get(
      "/oidc/authorize",
      {
        summary: "Authorization endpoint: single sign-on, or the hosted login page (OIDC Core §3.1.2)",
        operationId: "getOidcAuthorize",
        responses: {
          200: html("The login page, or the consent page"),
          303: "Back to the client: a code (single sign-on) or an error (RFC 6749 §4.1.2.1, OIDC Core §3.1.2.6)",
          400: html("Error page: unknown client or unregistered redirect URI (never redirected)"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app }) => outagePage(app, () => showAuthorize(c, app)),
    )
    .post(
      "/oidc/authorize",
      {
        summary: "The login form's submission: signs in as POST /0.1/token does, then consent or the code",
        operationId: "submitOidcLogin",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("The consent page (a third-party client)"),
          303: "Back to the client with `code`, `state` and `iss` (RFC 9207)",
          400: html("Error page (CSRF token missing or wrong, unknown client…)"),
          401: html("The form again, with the generic failure"),
          429: html("Too many attempts"),
          503: html("Sign-in unavailable (database outage): no code issued"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitPassword(c, app, body, hooks)),
    )
    .post(
      "/oidc/authorize/consent",
      {
        summary: "The consent page's answer (OIDC Core §3.1.2.4): `decision=allow` or `deny`",
        operationId: "submitOidcConsent",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("The login page (the browser session ended meanwhile)"),
          303: "Back to the client: a code, or `access_denied`",
          400: html("Error page"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitConsent(c, app, body)),
    )
    .post(
      "/oidc/authorize/saml",
      {
        summary: "The login page's SAML button: starts the SAML login of the client's tenant",
        operationId: "startOidcSamlLogin",
        bodyType: "form",
        body: formBody,
        responses: {
          303: "To the SAML identity provider",
          400: html("Error page"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => startSaml(c, app, body)),
    )
    .get(
      "/oidc/authorize/saml",
      {
        summary: "Back from the SAML identity provider (via /saml/acs): signed in, then consent or the code",
        operationId: "finishOidcSamlLogin",
        responses: {
          200: html("The consent page"),
          303: "Back to the client",
          400: html("Error page"),
          401: html("The login page: single sign-on did not succeed"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app }) => outagePage(app, () => finishSaml(c, app)),
    );
}
