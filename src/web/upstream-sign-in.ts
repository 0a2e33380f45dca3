// Sign-in through a tenant's upstream OpenID Connect provider, on the hosted login page
// (docs/federation.md). Three steps, the browser's:
//   1. GET /oidc/authorize/upstream (the page's "Continue with …" button): the authorization request
//      checked, a sign-in under way recorded (state, nonce, PKCE), a cookie binding it to this browser,
//      and off to the provider;
//   2. GET /oidc/upstream/{uuid}/callback (the provider's redirect URI, one per provider): the code
//      exchanged, the ID token verified, the user found or made (services/integrations/upstream-oidc/);
//      the completed sign-in's one-time secret replaces the cookie;
//   3. GET /oidc/upstream-sign-in: the login through the `oidc` identity provider (second factor
//      included), then the browser flow of every sign-in (web/flow/authorization.ts): consent, the code.
// Step 3 is a page of its own beside /oidc/authorize so that the pages it shows (second step, consent)
// post to their usual relative targets.
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { ApiError, MfaRequired } from "../domain/errors.ts";
import { uuidParam } from "../domain/validate.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { type Env, queryObject, RouteGroup } from "../http/route.ts";
import { awaitSecondStep, bindUpstreamSession } from "../services/integrations/upstream-oidc/upstream-sessions.ts";
import { findProvider } from "../services/integrations/upstream-oidc/providers.ts";
import {
  beginUpstreamLogin,
  completedLoginParams,
  finishUpstreamLogin,
  UPSTREAM_LOGIN_SECONDS,
  UpstreamSignInRefused,
} from "../services/integrations/upstream-oidc/sign-in.ts";
import { checkAuthorizationRequest, REQUEST_PARAMS } from "../services/oidc/authorize.ts";
import { BROWSER_SESSION_COOKIE, findBrowserSession } from "../services/oidc/browser-session.ts";
import { discardSignIn, loginNameOf, upstreamSignIn, type SignedIn } from "../services/oidc/sign-in.ts";
import { answerCheck, continueSignIn, secondStepPage } from "./flow/authorization.ts";
import { pendingLink } from "../services/integrations/upstream-oidc/link-proof.ts";
import {
  LINK_ACTION,
  LINK_STEP_ACTION,
  linkPasswordPage,
  submitLinkPassword,
  submitLinkStep,
  UPSTREAM_DONE_COOKIE,
} from "./upstream-link.ts";
import {
  browserOrigin,
  clearCookie,
  cookieOptions,
  csrfToken,
  outagePage,
  page,
  redirectTo,
  signInRefusal,
  stringParams,
  UNAVAILABLE,
} from "./pages/browser.ts";

/** The sign-in under way (step 1 → 2), then the completed one (step 2 → 3): one cookie, one secret at a time. */
const UPSTREAM_COOKIE = "tessera_oidc_upstream";

const requestParams = (p: Record<string, string | undefined>) => {
  const out: Record<string, string> = {};
  for (const name of REQUEST_PARAMS) if (p[name] !== undefined) out[name] = p[name]!;
  return out;
};

const refusedPage = (c: Context<Env>, app: AppContext, e: UpstreamSignInRefused, status = 400) =>
  page(c, app, { step: "error", message: e.message }, status);

async function start(c: Context<Env>, app: AppContext): Promise<Response> {
  const params = stringParams(queryObject(c));
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const provider =
    params.provider && /^[0-9a-f-]{36}$/i.test(params.provider) ? await findProvider(app, params.provider) : null;
  // Only a provider of the client's own tenant: another tenant's provider never signs in here.
  if (!provider || provider.tenantUuid !== check.client.tenantUuid)
    return page(c, app, { step: "error", message: "upstream.not_available" }, 400);
  try {
    const started = await beginUpstreamLogin(
      app,
      provider,
      requestParams(params),
      requestIssuer(c, app),
      check.request.loginHint ?? null,
    );
    setCookie(c, UPSTREAM_COOKIE, started.browserSecret, cookieOptions(c, app, UPSTREAM_LOGIN_SECONDS));
    return redirectTo(c, started.location);
  } catch (e) {
    if (e instanceof UpstreamSignInRefused) return refusedPage(c, app, e, 502);
    throw e;
  }
}

async function callback(c: Context<Env>, app: AppContext, providerUuid: string): Promise<Response> {
  const query = stringParams(queryObject(c));
  const browserSecret = getCookie(c, UPSTREAM_COOKIE);
  clearCookie(c, app, UPSTREAM_COOKIE);
  try {
    const done = await finishUpstreamLogin(
      app,
      providerUuid,
      { code: query.code, state: query.state, error: query.error, iss: query.iss },
      browserSecret,
      requestIssuer(c, app),
      (await findBrowserSession(app, getCookie(c, BROWSER_SESSION_COOKIE)))?.userUuid ?? null,
    );
    setCookie(c, UPSTREAM_DONE_COOKIE, done.completion, cookieOptions(c, app, UPSTREAM_LOGIN_SECONDS));
    return redirectTo(c, `${requestIssuer(c, app)}/upstream-sign-in`);
  } catch (e) {
    if (e instanceof UpstreamSignInRefused) {
      app.log.info("upstream sign-in refused", { provider_uuid: providerUuid, reason: e.reason });
      return refusedPage(c, app, e, e.reason === "unreachable" || e.reason === "jwks" ? 502 : 401);
    }
    throw e;
  }
}

async function resume(c: Context<Env>, app: AppContext): Promise<Response> {
  const completion = getCookie(c, UPSTREAM_DONE_COOKIE);
  // An existing account of the verified email: its password first (web/upstream-link.ts); the cookie stays.
  const awaiting = completion ? await pendingLink(app, completion) : null;
  if (awaiting) return linkPasswordPage(c, app, awaiting);
  clearCookie(c, app, UPSTREAM_DONE_COOKIE);
  const stored = completion ? await completedLoginParams(app, completion) : null;
  if (!completion || !stored) return page(c, app, { step: "error", message: "upstream.expired" }, 400);
  const params = stored as Record<string, string | undefined>;
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  let signedIn: SignedIn & { amr: string[] };
  try {
    signedIn = await upstreamSignIn(app, check.client, check.request.scope, completion, browserOrigin(c, app));
  } catch (e) {
    // The upstream vouched for the user; the tenant's second factor still applies (web/flow/second-step.ts).
    // Its form carries this browser's CSRF token as the password form's does.
    if (e instanceof MfaRequired && e.proven)
      // Its upstream session waits on the step's stored row, to be bound to the browser session made after it.
      return secondStepPage(
        c,
        app,
        check,
        { ...params, csrf_token: await csrfToken(c, app) },
        e,
        ["oidc"],
        (stepHash, expiresAt) => awaitSecondStep(app, completion, stepHash, expiresAt),
      );
    if (!(e instanceof ApiError)) throw e;
    if (e.status >= 500) return page(c, app, { step: "error", message: UNAVAILABLE }, 503);
    const refused = signInRefusal(e);
    return page(c, app, { step: "error", message: refused.message }, refused.status);
  }
  const login = await loginNameOf(app, signedIn.userUuid);
  if (!login) {
    await discardSignIn(app, signedIn, "no login name");
    return page(c, app, { step: "error", message: "upstream.cannot_sign_in" }, 401);
  }
  // `oidc`: authenticated by the tenant's upstream OpenID provider (not an RFC 8176 value; documented),
  // plus `mfa` when its trusted `amr` met the tenant's MFA requirement.
  return continueSignIn(c, app, check, params, signedIn, login, signedIn.amr, (browserSessionId) =>
    bindUpstreamSession(app, completion, browserSessionId, signedIn.sessionUuid),
  );
}

const html = (description: string) => ({ description, contentType: "text/html" });
const formBody = z.record(z.string(), z.unknown());

export function upstreamSignInRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page")
    .get(
      "/oidc/authorize/upstream",
      {
        summary: "The login page's \"Continue with …\" button: off to the tenant's upstream OpenID provider",
        operationId: "startUpstreamOidcLogin",
        responses: {
          303: "To the upstream provider's authorization endpoint (PKCE S256, state, nonce)",
          400: html("Error page: invalid authorization request, or a provider not of the client's tenant"),
          502: html("Error page: the provider cannot be reached"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app }) => outagePage(app, () => start(c, app)),
    )
    .get(
      "/oidc/upstream/{uuid}/callback",
      {
        summary: "An upstream provider's redirect URI (OIDC Core §3.1.2.5): the code exchanged, the ID token verified",
        operationId: "upstreamOidcCallback",
        params: z.object({ uuid: uuidParam }),
        responses: {
          303: "On to /oidc/upstream-sign-in",
          401: html("Error page: the sign-in was refused (why is said)"),
          502: html("Error page: the provider cannot be reached"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app, params }) => outagePage(app, () => callback(c, app, params.uuid)),
    )
    .get(
      "/oidc/upstream-sign-in",
      {
        summary: "The end of an upstream sign-in: the login, then the second factor, consent or the code",
        operationId: "finishUpstreamOidcLogin",
        responses: {
          200: html("The second step, or the consent page"),
          303: "Back to the client with `code`, `state` and `iss`",
          400: html("Error page: expired or used"),
          401: html("Error page: refused"),
          503: html("Error page: database outage"),
        },
      },
      ({ c, app }) => outagePage(app, () => resume(c, app)),
    )
    .post(
      `/oidc/${LINK_ACTION}`,
      {
        summary:
          "The page shown on return when the upstream's verified email is an existing account's: its password, to link it",
        operationId: "linkUpstreamOidcAccount",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("The account's second step"),
          303: "Linked: back to the client with `code`, `state` and `iss` (consent first for a third party)",
          400: html("Error page: expired, CSRF, or the link could not be made"),
          401: html("The password form again: wrong password (counted as a failed login; nothing linked)"),
          429: html("Too many attempts"),
          503: html("Database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitLinkPassword(c, app, stringParams(body)), c, body),
    )
    .post(
      `/oidc/${LINK_STEP_ACTION}`,
      {
        summary: "The second step of the account being linked to an upstream identity; then the link and the code",
        operationId: "linkUpstreamOidcAccountSecondStep",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("The next step (recovery codes after enrolment), or the consent page"),
          303: "Linked: back to the client with `code`, `state` and `iss`",
          400: html("Error page (expired sign-in, CSRF, the link could not be made) or the enrolment again"),
          401: html("The step again: wrong code or passkey (counted as a failed login)"),
          429: html("Too many attempts"),
          503: html("Database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitLinkStep(c, app, stringParams(body)), c, body),
    );
}
