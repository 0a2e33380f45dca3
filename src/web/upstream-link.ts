// The page shown on return from a tenant's upstream provider whose verified email is an existing
// account's (docs/federation.md "Accounts"): "An account with your … email exists here — type its
// password to link it". The password goes through the login page's own sign-in (services/oidc/sign-in.ts
// passwordSignIn: throttling counted as a failed login, disabled users, the authentication method), the
// account's second factor through the login page's second step (flow/second-step.ts) with a Flow of its
// own whose end makes the link; only then is anything linked (services/integrations/upstream-oidc/
// link-proof.ts), and the sign-in continues as after a password. A wrong password links nothing.
// The sign-in awaiting the password is the completion cookie's; the authorization request is the one
// stored with it (never the form's), checked again at each step.
import { bindUpstreamSession } from "../services/integrations/upstream-oidc/upstream-sessions.ts";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import type { AppContext } from "../boot/context.ts";
import { ApiError, MfaRequired } from "../domain/errors.ts";
import { requestIssuer } from "../http/public-urls.ts";
import type { Env } from "../http/route.ts";
import { confirmLink, type PendingLink, pendingLink } from "../services/integrations/upstream-oidc/link-proof.ts";
import { checkAuthorizationRequest, REQUEST_PARAMS } from "../services/oidc/authorize.ts";
import { discardSignIn, passwordSignIn, provenSignIn, type SignedIn } from "../services/oidc/sign-in.ts";
import { answerCheck, continueSignIn, type Ok } from "./flow/authorization.ts";
import { beginStep, fatal, type Flow, OPTIONS_ACTION, runStep } from "./flow/second-step.ts";
import { msg, type PageText } from "./pages/language.ts";
import {
  browserOrigin,
  clearCookie,
  CSRF_REFUSED,
  csrfMatches,
  csrfToken,
  hiddenFields,
  page,
  type Params,
  signInRefusal,
} from "./pages/browser.ts";

/** The completed (or awaiting) sign-in's cookie, set by web/upstream-sign-in.ts on return. */
export const UPSTREAM_DONE_COOKIE = "tessera_oidc_upstream_done";
/** The password form's target and the second step's (relative to the issuer, as the login page's). */
export const LINK_ACTION = "upstream-sign-in";
export const LINK_STEP_ACTION = "upstream-link-mfa";
const EXPIRED = "mfa.expired";

/** The password form: the account's login name shown (read-only), the password asked. */
export async function linkPasswordPage(
  c: Context<Env>,
  app: AppContext,
  pending: PendingLink,
  message: PageText = "",
  status = 200,
): Promise<Response> {
  const provider = pending.provider.displayName;
  return page(
    c,
    app,
    {
      step: "mfa",
      title: "upstream_link.title",
      mode: "account-login",
      action: LINK_ACTION,
      hidden: { csrf_token: await csrfToken(c, app) },
      message,
      extra: {
        intro: msg("upstream_link.intro", { provider }),
        known_login: pending.login,
        submit: "upstream_link.submit",
      },
    },
    status,
    // The sign-in ends with a redirect to the client (CSP form-action): its redirect URI, checked at the start.
    {
      tenantUuid: pending.provider.tenantUuid,
      formTargets: pending.params.redirect_uri ? [pending.params.redirect_uri] : [],
    },
  );
}

/** The awaiting sign-in of this browser and its authorization request, checked again; else the page to show. */
async function awaitingSignIn(
  c: Context<Env>,
  app: AppContext,
  params: Params,
): Promise<{ pending: PendingLink; completion: string; check: Ok } | Response> {
  if (!(await csrfMatches(c, app, params.csrf_token))) return fatal(c, app, CSRF_REFUSED, 400);
  const completion = getCookie(c, UPSTREAM_DONE_COOKIE);
  const pending = completion ? await pendingLink(app, completion) : null;
  if (!completion || !pending) return fatal(c, app, EXPIRED, 400);
  const check = await checkAuthorizationRequest(app, pending.params, requestIssuer(c, app));
  if (check.kind !== "ok") return answerCheck(c, app, check);
  return { pending, completion, check };
}

/** The account proven (password, and its second factor): the link, then the sign-in goes on. */
async function linkAndContinue(
  c: Context<Env>,
  app: AppContext,
  at: { pending: PendingLink; completion: string; check: Ok },
  signedIn: SignedIn,
  amr: string[],
): Promise<Response> {
  if (!(await confirmLink(app, at.completion, signedIn.userUuid))) {
    await discardSignIn(app, signedIn, "upstream link not made");
    clearCookie(c, app, UPSTREAM_DONE_COOKIE);
    return fatal(c, app, "upstream_link.failed", 400);
  }
  clearCookie(c, app, UPSTREAM_DONE_COOKIE);
  // Its upstream session too, as a sign-in without a link binds it (docs/federation.md "Logout").
  return continueSignIn(c, app, at.check, at.pending.params, signedIn, at.pending.login, amr, (browserSessionId) =>
    bindUpstreamSession(app, at.completion, browserSessionId, signedIn.sessionUuid),
  );
}

/** The second step of the account to link: the login page's, ending in the link. */
function linkFlow(
  c: Context<Env>,
  app: AppContext,
  at: { pending: PendingLink; completion: string; check: Ok },
  /** The CSRF token the forms carry (csrfMatches has just checked it against the cookie). */
  csrf: string,
): Flow {
  return {
    clientId: at.check.client.clientId,
    action: LINK_STEP_ACTION,
    // The login page's passkey options answer any pending step of this browser and client.
    optionsAction: OPTIONS_ACTION,
    hidden: hiddenFields(at.pending.params, REQUEST_PARAMS, csrf),
    pageOptions: { tenantUuid: at.check.client.tenantUuid, formTargets: [at.check.request.redirectUri] },
    async finish(done) {
      const signedIn = await provenSignIn(
        app,
        at.check.client,
        at.check.request.scope,
        done.proven,
        browserOrigin(c, app),
      );
      return linkAndContinue(c, app, at, signedIn, done.amr);
    },
  };
}

/** POST of the password form. */
export async function submitLinkPassword(c: Context<Env>, app: AppContext, params: Params): Promise<Response> {
  const at = await awaitingSignIn(c, app, params);
  if (at instanceof Response) return at;
  let signedIn: SignedIn & { amr: string[] };
  try {
    signedIn = await passwordSignIn(app, at.check.client, at.check.request.scope, {
      login: at.pending.login,
      password: params.password ?? "",
      ...browserOrigin(c, app),
    });
  } catch (e) {
    if (e instanceof MfaRequired && e.proven) {
      // The password was this account's: its second factor next, then the link.
      if (e.proven.userUuid !== at.pending.userUuid) return fatal(c, app, "upstream_link.failed", 400);
      return beginStep(c, app, linkFlow(c, app, at, params.csrf_token!), e, ["pwd"]);
    }
    if (!(e instanceof ApiError)) throw e;
    const refused = signInRefusal(e);
    return linkPasswordPage(c, app, at.pending, refused.message, refused.status);
  }
  return linkAndContinue(c, app, at, signedIn, signedIn.amr);
}

/** POST of the second step's forms. */
export async function submitLinkStep(c: Context<Env>, app: AppContext, params: Params): Promise<Response> {
  const at = await awaitingSignIn(c, app, params);
  if (at instanceof Response) return at;
  return runStep(c, app, linkFlow(c, app, at, params.csrf_token!), params);
}
