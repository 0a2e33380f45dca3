// The authorization endpoint and its hosted pages (OIDC Core §3.1.2, RFC 6749 §4.1.1). One
// authorization goes through STEPS, each a page of its own that posts back here:
//   1. sign-in: the browser session (single sign-on, §3.1.2.3) when there is a usable one, else the
//      password form (POST /oidc/authorize) or the tenant's SAML IdP (POST /oidc/authorize/saml,
//      back at GET /oidc/authorize/saml); for a user with a second factor, the password is followed
//      by the MFA step (web/second-step.ts, POST /oidc/authorize-mfa), and a passkey alone may sign
//      in where the tenant allows it (web/passkey-sign-in.ts); every sign-in then starts the
//      browser session (continueSignIn) with the factors used (RFC 8176 `amr`);
//   2. consent (§3.1.2.4) for a third-party client (POST /oidc/authorize/consent);
//   3. the code, back to the client (§3.1.2.5).
// `prompt=none` never shows a page: it answers `login_required` / `consent_required` (§3.1.2.6).
// The steps themselves are web/flow/authorization.ts; this module is the endpoints that run them.
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { ApiError, MfaRequired } from "../domain/errors.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { RouteGroup, queryObject, type Env } from "../http/route.ts";
import { beginSamlLogin } from "../services/integrations/saml/saml-login.ts";
import { samlDomainOfTenant } from "../services/integrations/saml/saml-config.ts";
import { checkAuthorizationRequest, REQUEST_PARAMS } from "../services/oidc/authorize.ts";
import { rememberConsent } from "../services/oidc/consent.ts";
import { discardSignIn, loginNameOf, passwordSignIn, samlSignIn, type SignedIn } from "../services/oidc/sign-in.ts";
import {
  afterSignIn,
  answerCheck,
  CHANGE_ACCOUNT,
  continueSignIn,
  discoveredProvider,
  IDENTIFIER_STEP,
  issueAndRedirect,
  loginForm,
  type Ok,
  redirectBack,
  secondStepPage,
  usableSession,
} from "./flow/authorization.ts";
import {
  browserOrigin,
  browserSessionFor,
  clearCookie,
  cookieOptions,
  CSRF_REFUSED,
  csrfMatches,
  csrfToken,
  GENERIC_FAILURE,
  outagePage,
  page,
  redirectTo,
  signInRefusal,
  stringParams,
  UNAVAILABLE,
  type Params,
} from "./pages/browser.ts";
import type { PageText } from "./pages/language.ts";
import { upstreamStartHref } from "./pages/upstream-buttons.ts";
import type { RealmProvider } from "../services/integrations/home-realm.ts";

const SAML_COOKIE = "tessera_oidc_saml";

async function showAuthorize(c: Context<Env>, app: AppContext, params: Params): Promise<Response> {
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
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
  // The password step's "not you?" link: the identifier step, the client's `login_hint` set aside.
  if (params.account === CHANGE_ACCOUNT) return loginForm(c, app, check, params, { username: "" });
  // OIDC Core §3.1.2.1 `login_hint` stands for the identifier step: its domain may lead straight to
  // the tenant's provider (home-realm discovery), else the password step follows.
  const hint = check.request.loginHint;
  if (hint) {
    const provider = await discoveredProvider(app, check, hint);
    if (provider) return toProvider(c, app, check, params, provider);
  }
  return loginForm(c, app, check, params);
}

/**
 * The identifier step's submission (docs/federation.md "Home-realm discovery"): straight to the one
 * provider the login name's domain leads to, else the password step for that name. The same answer
 * whether or not the user exists: the domain decides.
 */
async function submitIdentifier(c: Context<Env>, app: AppContext, check: Ok, params: Params): Promise<Response> {
  const login = (params.username ?? "").trim();
  if (!login) return loginForm(c, app, check, params, { username: "", status: 400 });
  const provider = await discoveredProvider(app, check, login);
  // The name typed here goes on as the upstream's `login_hint` (services/integrations/upstream-oidc/sign-in.ts).
  if (provider) return toProvider(c, app, check, { ...params, login_hint: login }, provider);
  return loginForm(c, app, check, params, { username: login });
}

/** Off to a provider the page would offer with a button: the upstream's start (web/upstream-sign-in.ts) or SAML. */
function toProvider(c: Context<Env>, app: AppContext, check: Ok, params: Params, provider: RealmProvider) {
  if (provider.kind === "saml") return samlRedirect(c, app, check, params);
  return redirectTo(c, `${requestIssuer(c, app)}/${upstreamStartHref(provider.uuid, params)}`);
}

async function submitPassword(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  // OIDC Core §3.1.2.1: the authorization request itself may come by POST (a form the client's page
  // posts); it is told from the login form's submission by carrying neither the form's CSRF token
  // nor credentials.
  if (params.csrf_token === undefined && params.username === undefined && params.password === undefined)
    return showAuthorize(c, app, params);
  if (!(await csrfMatches(c, app, params.csrf_token)))
    return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
  if (check.kind !== "ok") return answerCheck(c, app, check);
  if (params.step === IDENTIFIER_STEP && params.password === undefined) return submitIdentifier(c, app, check, params);
  const again = (message: PageText, status: number) =>
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
    // The password was right; a second factor is due (web/flow/second-step.ts), then continueSignIn.
    if (e instanceof MfaRequired && e.proven) return secondStepPage(c, app, check, params, e);
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
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
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
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
  if (check.kind !== "ok") return answerCheck(c, app, check);
  return samlRedirect(c, app, check, params);
}

/** The SAML login of the client's tenant: off to its IdP, back at GET /oidc/authorize/saml with the request. */
async function samlRedirect(c: Context<Env>, app: AppContext, check: Ok, params: Params): Promise<Response> {
  const domain = await samlDomainOfTenant(app, check.client.tenantUuid);
  if (!domain) return page(c, app, { step: "error", message: "error.saml_not_configured" }, 400);
  const back = new URL(`${requestIssuer(c, app)}/authorize/saml`);
  for (const name of REQUEST_PARAMS) if (params[name] !== undefined) back.searchParams.set(name, params[name]!);
  const { location, saml_session_id } = await beginSamlLogin(app, back.toString(), domain);
  // The SAML session is this browser's: a link to the return URL alone signs nobody in.
  setCookie(c, SAML_COOKIE, saml_session_id, cookieOptions(c, app, app.config.saml.saml_login_timeout_seconds));
  return redirectTo(c, location);
}

async function finishSaml(c: Context<Env>, app: AppContext): Promise<Response> {
  const params = stringParams(queryObject(c));
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const samlSessionId = getCookie(c, SAML_COOKIE);
  clearCookie(c, app, SAML_COOKIE);
  const failed = () => loginForm(c, app, check, params, { message: "error.saml_failed", status: 401 });
  if (!samlSessionId || params.login_failure_code !== undefined) return failed();
  let signedIn: SignedIn;
  try {
    signedIn = await samlSignIn(app, check.client, check.request.scope, samlSessionId, browserOrigin(c, app));
  } catch (e) {
    // The IdP vouched for the user; the user's second factor still applies (web/flow/second-step.ts),
    // its form carrying this browser's CSRF token as the password form's does.
    if (e instanceof MfaRequired && e.proven)
      return secondStepPage(c, app, check, { ...params, csrf_token: await csrfToken(c, app) }, e, ["saml"]);
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

export function oidcAuthorizeRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page")
    .get(
      "/oidc/authorize",
      {
        summary: "Authorization endpoint: single sign-on, or the hosted login page (OIDC Core §3.1.2)",
        operationId: "getOidcAuthorize",
        responses: {
          200: html("The login page, or the consent page"),
          303: "Back to the client: a code (single sign-on) or an error (RFC 6749 §4.1.2.1, OIDC Core §3.1.2.6); or, for a `login_hint` whose domain leads to the tenant's one provider, to that provider (home-realm discovery)",
          400: html("Error page: unknown client or unregistered redirect URI (never redirected)"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app }) => outagePage(app, () => showAuthorize(c, app, stringParams(queryObject(c))), c),
    )
    .post(
      "/oidc/authorize",
      {
        summary:
          "The login form's submission: signs in as POST /0.1/token does, then consent or the code; the identifier step (`step=identifier`, a login name alone): to the provider its domain leads to, else the password step (home-realm discovery); without the form's CSRF token and credentials, an authorization request by POST (OIDC Core §3.1.2.1)",
        operationId: "submitOidcLogin",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("The consent page (a third-party client), or the password step"),
          303: "Back to the client with `code`, `state` and `iss` (RFC 9207); or to the provider the identifier's domain leads to",
          400: html("Error page (CSRF token missing or wrong, unknown client…)"),
          401: html("The form again, with the generic failure"),
          429: html("Too many attempts"),
          503: html("Sign-in unavailable (database outage): no code issued"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitPassword(c, app, body), c, body),
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
      ({ c, app, body }) => outagePage(app, () => submitConsent(c, app, body), c, body),
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
      ({ c, app, body }) => outagePage(app, () => startSaml(c, app, body), c, body),
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
      ({ c, app }) => outagePage(app, () => finishSaml(c, app), c),
    );
}
