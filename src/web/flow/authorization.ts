// The browser sign-in flow of an authorization request (OIDC Core §3.1.2, RFC 6749 §4.1.1), as steps the
// page routes call (web/authorize.ts, web/second-step.ts, web/passkey-sign-in.ts):
//   1. sign-in: the browser session (single sign-on, §3.1.2.3) when there is a usable one, else the
//      password form (`loginForm`); a password accepted for a user with a second factor goes on to
//      the second step (`secondStepPage`, flow/second-step.ts), whose proof comes back through
//      `oidcFlow`'s `finish`; every sign-in then starts the browser session (`continueSignIn`) with the
//      factors used (RFC 8176 `amr`);
//   2. consent (§3.1.2.4) for a third-party client (`consentPage`);
//   3. the code, back to the client (§3.1.2.5, `issueAndRedirect`).
// The second step knows nothing of this flow: it is handed a `Flow` (where it leads), so the
// dependency points one way.
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { users } from "../../db/schema.ts";
import { AuthenticationFailed, type MfaRequired } from "../../domain/errors.ts";
import { requestIssuer } from "../../http/public-urls.ts";
import type { Env } from "../../http/route.ts";
import { tenantAllowsPasswordless } from "../../services/auth/mfa-policy.ts";
import { UPSTREAM_METHOD } from "../../services/integrations/upstream-oidc/sign-in.ts";
import { bindAfterSecondStep } from "../../services/integrations/upstream-oidc/upstream-sessions.ts";
import { homeRealmOf, type RealmProvider, tenantHomeProvider } from "../../services/integrations/home-realm.ts";
import { samlConfigForDomain, samlDomainOfTenant } from "../../services/integrations/saml/saml-config.ts";
import {
  authorizationRedirect,
  checkAuthorizationRequest,
  REQUEST_PARAMS,
  type AuthorizationRequest,
  type AuthorizeCheck,
} from "../../services/oidc/authorize.ts";
import {
  BROWSER_SESSION_COOKIE,
  findBrowserSession,
  sessionUserName,
  startBrowserSession,
  type BrowserSessionRow,
} from "../../services/oidc/browser-session.ts";
import type { ClientRow } from "../../services/oidc/clients.ts";
import { scopesNeedingConsent } from "../../services/oidc/consent.ts";
import { consumePushedRequest } from "../../services/oidc/pushed-requests.ts";
import { discardSignIn, issueCode, provenSignIn, sessionSignIn, type SignedIn } from "../../services/oidc/sign-in.ts";
import {
  browserOrigin,
  browserSessionFor,
  clearCookie,
  cookieOptions,
  csrfToken,
  hiddenFields,
  page,
  redirectTo,
  type Params,
} from "../pages/browser.ts";
import { relativeBase } from "../pages/oidc-login.ts";
import { authorizationEndpointOf, upstreamLinks } from "../pages/upstream-buttons.ts";
import { beginStep, type Flow, OPTIONS_ACTION, STEP_ACTION } from "./second-step.ts";
import { type PageText, scopeText } from "../pages/language.ts";

export type Ok = Extract<AuthorizeCheck, { kind: "ok" }>;
export type Session = BrowserSessionRow & { tenantUuid: string };

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
export function redirectBack(
  c: Context<Env>,
  app: AppContext,
  redirectUri: string,
  params: Record<string, string>,
  state: string | null,
): Response {
  return redirectTo(c, authorizationRedirect(redirectUri, { ...params, state, iss: requestIssuer(c, app) }));
}

/**
 * The sign-in step. Where the client's tenant has a domain that leads to exactly one provider
 * (docs/federation.md "Home-realm discovery"), it asks the login name first (`identifier`), then the
 * password for a name no provider claims (`password`, the name shown read-only with a way back);
 * elsewhere one form asks both, as always.
 */
export async function loginForm(
  c: Context<Env>,
  app: AppContext,
  { client, request }: Ok,
  params: Params,
  extra: { message?: PageText; username?: string; status?: number } = {},
): Promise<Response> {
  const domain = await samlDomainOfTenant(app, client.tenantUuid);
  const saml = domain ? await samlConfigForDomain(app, domain) : null;
  // Passwordless passkey sign-in (web/passkey-sign-in.ts) where the client's tenant allows it.
  const passkeySignIn = await tenantAllowsPasswordless(app, client.tenantUuid);
  // OIDC Core §3.1.2.1 `login_hint`: the login the client expects, prefilled (the user may change it).
  const username = extra.username ?? request.loginHint ?? "";
  const home = await tenantHomeProvider(app, client.tenantUuid);
  const mode = !home ? "single" : username ? "password" : "identifier";
  // The identifier's answer may redirect to the upstream: the form's CSP must let it (as SAML's IdP).
  const upstreamTarget =
    mode === "identifier" && home?.kind === "oidc" ? await authorizationEndpointOf(app, home.uuid) : null;
  const base = relativeBase(new URL(c.req.url).pathname);
  const hidden = hiddenFields(params, REQUEST_PARAMS, await csrfToken(c, app));
  if (mode === "identifier") hidden.step = IDENTIFIER_STEP;
  return page(
    c,
    app,
    {
      step: "login",
      mode,
      clientName: client.name,
      hidden,
      message: extra.message,
      username,
      changeHref: mode === "password" ? changeAccountHref(params, base) : undefined,
      samlDomain: saml ? domain : null,
      passkeySignIn,
      upstreamLinks: await upstreamLinks(app, client.tenantUuid, params, base),
    },
    extra.status ?? 200,
    {
      tenantUuid: client.tenantUuid,
      formTargets: [
        request.redirectUri,
        ...(saml ? [saml.idp.ssoUrl] : []),
        ...(upstreamTarget ? [upstreamTarget] : []),
      ],
    },
  );
}

/** The identifier form's marker: its submission carries a login name and no password. */
export const IDENTIFIER_STEP = "identifier";
/** The "not you?" link's marker: the identifier step again, `login_hint` set aside. */
export const CHANGE_ACCOUNT = "change";

/** Back to the identifier step with the same authorization request (the password step's "not you?" link). */
function changeAccountHref(params: Params, base: string): string {
  const query = new URLSearchParams();
  for (const name of REQUEST_PARAMS) if (params[name] !== undefined) query.set(name, params[name]!);
  query.set("account", CHANGE_ACCOUNT);
  return `${base}authorize?${query.toString()}`;
}

/**
 * Home-realm discovery (docs/federation.md): the one provider the login name's DOMAIN leads to, or
 * null (the password step). Only the client's own tenant counts: the flow is bound to it, and its
 * sign-in options are that tenant's, so another tenant's provider is never chosen. Nothing here
 * depends on whether the user exists: the answer reveals no account.
 */
export async function discoveredProvider(
  app: AppContext,
  { client }: Ok,
  login: string,
): Promise<RealmProvider | null> {
  const realm = await homeRealmOf(app, login);
  if (!realm || realm.tenantUuid !== client.tenantUuid || realm.providers.length !== 1) return null;
  return realm.providers[0]!;
}

/** The browser session, when it may stand for this sign-in (OIDC Core §3.1.2.1 prompt, max_age; the client's tenant). */
export async function usableSession(
  c: Context<Env>,
  app: AppContext,
  { client, request }: Ok,
): Promise<Session | null> {
  if (request.prompt.includes("login") || request.prompt.includes("select_account")) return null;
  const session = await browserSessionFor(c, app, client.tenantUuid, request.maxAge);
  // OIDC Core §3.1.2.1 `id_token_hint`: the session of another user than the one hinted does not stand in.
  if (session && request.hintedSub && session.userUuid !== request.hintedSub) return null;
  return session;
}

/**
 * After the sign-in step: consent when the client needs it, then the code. `signedIn` is the token
 * the sign-in just issued (the password form, SAML); single sign-on issues one here.
 */
export async function afterSignIn(
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
  // The user is known: their own language, after the request's ui_locales.
  const [owner] = await app.db.select({ locale: users.locale }).from(users).where(eq(users.uuid, session.userUuid));
  return page(
    c,
    app,
    {
      step: "consent",
      clientName: client.name,
      userName: await sessionUserName(app, session),
      scopes: request.scope.map(scopeText),
      hidden: hiddenFields(params, REQUEST_PARAMS, await csrfToken(c, app)),
    },
    200,
    { tenantUuid: client.tenantUuid, formTargets: [request.redirectUri], userLocale: owner?.locale },
  );
}

export async function issueAndRedirect(
  c: Context<Env>,
  app: AppContext,
  client: ClientRow,
  request: AuthorizationRequest,
  session: Session,
  params: Params,
  signedIn: SignedIn | null,
): Promise<Response> {
  // RFC 9126 §4: a pushed request gives one code; spent now, whoever raced it gets an error.
  if (request.requestUri && !(await consumePushedRequest(app, client.clientId, request.requestUri))) {
    if (signedIn) await discardSignIn(app, signedIn, "request_uri already used");
    return redirectBack(
      c,
      app,
      request.redirectUri,
      { error: "invalid_request_uri", error_description: "request_uri was already used" },
      request.state,
    );
  }
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
      const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
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
  /** Told the new browser session's id (an upstream sign-in remembers its provider's session with it). */
  onSession?: (browserSessionId: string) => Promise<void>,
): Promise<Response> {
  const session = await newSession(c, app, signedIn, login, amr);
  await onSession?.(session.id);
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

/** Where an authorization's second step leads once the factor is proven: `continueSignIn`. */
export function oidcFlow(c: Context<Env>, app: AppContext, check: Ok, params: Params): Flow {
  return {
    clientId: check.client.clientId,
    action: STEP_ACTION,
    optionsAction: OPTIONS_ACTION,
    hidden: hiddenFields(params, REQUEST_PARAMS, params.csrf_token ?? ""),
    pageOptions: { tenantUuid: check.client.tenantUuid, formTargets: [check.request.redirectUri] },
    async finish(done, login) {
      const signedIn = await provenSignIn(app, check.client, check.request.scope, done.proven, browserOrigin(c, app));
      // After an upstream provider: its session, left waiting on the step's stored row, is bound to this
      // browser session too, so that its logout follows (docs/federation.md "Logout").
      const stepHash = done.amr.includes(UPSTREAM_METHOD) ? done.stepHash : undefined;
      return continueSignIn(
        c,
        app,
        check,
        params,
        signedIn,
        login,
        done.amr,
        stepHash
          ? (browserSessionId) => bindAfterSecondStep(app, stepHash, browserSessionId, signedIn.sessionUuid)
          : undefined,
      );
    },
  };
}

/** The password was right and a second factor is due (or must be enrolled): the step's first page. */
export function secondStepPage(
  c: Context<Env>,
  app: AppContext,
  check: Ok,
  params: Params,
  e: MfaRequired,
  firstFactor: string[] = ["pwd"],
  onPending?: (stepHash: string, expiresAt: Date) => Promise<void>,
) {
  return beginStep(c, app, oidcFlow(c, app, check, params), e, firstFactor, onPending);
}
