// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): the end_session_endpoint, GET and
// POST (§2). With a valid `id_token_hint` for the browser's user it signs out at once; without one
// (anyone's page could send the browser here: CSRF) it asks first (§2: "the OP SHOULD ask the
// End-User whether to log out"). Signing out ends the browser session and revokes the Tessera
// sessions issued through it; then back to a registered `post_logout_redirect_uri` with `state`
// (§3), or a "signed out" page. The hint's `sid` ends the browser session it names even where the
// cookie is gone. The clients signed in through the ended sessions are told: by a logout token
// (Back-Channel Logout 1.0, services/oidc/backchannel.ts, sent after this request) and, those with a
// front-channel URI, by their logout page framed in the signed-out page (Front-Channel Logout 1.0
// §3, with `iss` and `sid` when they need them); the redirect then waits for a click, as the page
// runs no script that could wait for the frames. A browser session that signed in through a tenant's
// upstream provider configured for it goes on to that provider's logout, and comes back through
// web/upstream-logout.ts to the same destination.
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { RouteGroup, queryObject, type Env } from "../http/route.ts";
import {
  BROWSER_SESSION_COOKIE,
  browserSessionBySid,
  endBrowserSession,
  findBrowserSession,
  frontchannelClients,
} from "../services/oidc/browser-session.ts";
import { checkLogoutRequest } from "../services/oidc/logout.ts";
import { upstreamLogoutEndpoint, upstreamLogoutLocation } from "../services/integrations/upstream-oidc/logout.ts";
import { requestIssuer } from "../http/public-urls.ts";
import {
  clearCookie,
  CSRF_REFUSED,
  csrfMatches,
  csrfToken,
  hiddenFields,
  outagePage,
  page,
  redirectTo,
  stringParams,
} from "./pages/browser.ts";

/** §2 request parameters, carried through the confirmation form. */
const LOGOUT_PARAMS = ["id_token_hint", "logout_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales"];

async function logout(
  c: Context<Env>,
  app: AppContext,
  raw: Record<string, unknown>,
  post: boolean,
): Promise<Response> {
  const params = stringParams(raw);
  const confirming = post && params.confirm === "yes";
  if (confirming && !(await csrfMatches(c, app, params.csrf_token)))
    return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const issuer = requestIssuer(c, app);
  const check = await checkLogoutRequest(app, issuer, params);
  if (check.kind === "page_error") return page(c, app, { step: "error", message: check.message }, 400);
  const { hint, client, redirectUri, state } = check;
  const session = await findBrowserSession(app, getCookie(c, BROWSER_SESSION_COOKIE));
  // The hint must name the browser's user; otherwise the user decides.
  const hintDecides = hint !== null && (!session || session.userUuid === hint.sub);
  const confirmed = confirming || hintDecides;
  if (!confirmed) {
    const hidden = { ...hiddenFields(params, LOGOUT_PARAMS, await csrfToken(c, app)), confirm: "yes" };
    // The form's answer may redirect to the upstream provider's logout (CSP form-action covers redirects).
    const upstream = session ? await upstreamLogoutEndpoint(app, session.id) : null;
    return page(c, app, { step: "logout", clientName: client?.name, hidden }, 200, {
      tenantUuid: client?.tenantUuid,
      formTargets: [redirectUri, upstream?.endpoint].filter((u): u is string => typeof u === "string"),
    });
  }
  // The hint's `sid` names the browser session its ID token came through: it ends too, even from a
  // browser without that session's cookie (another device, a cleared cookie) — only when the hint
  // decided (a confirmation ends this browser's session, no other).
  const named = hintDecides && hint?.sid ? await browserSessionBySid(app, hint.sid, hint.sub) : null;
  const frames = frontchannelFrames(
    issuer,
    await frontchannelClients(
      app,
      [session?.id, named?.id].filter((id): id is string => id !== undefined),
    ),
  );
  // Where the relying party asked to go (§3), with its `state`.
  let back: string | null = null;
  if (redirectUri) {
    const url = new URL(redirectUri);
    if (state !== null) url.searchParams.set("state", state);
    back = url.toString();
  }
  // Signed in through an upstream provider configured for it: on to its logout, then back to `back`
  // (services/integrations/upstream-oidc/logout.ts); read before the session ends and its record with it.
  const upstreamSession = session ?? named;
  const upstream = upstreamSession
    ? await upstreamLogoutLocation(app, upstreamSession.id, issuer, back, client?.tenantUuid ?? null)
    : null;
  for (const ended of [session, named]) {
    if (!ended || (ended === named && ended.id === session?.id)) continue;
    const revoked = await endBrowserSession(app, ended.id);
    app.log.info("OIDC logout", {
      user_uuid: ended.userUuid,
      revoked_sessions: revoked,
      client_id: client?.clientId,
    });
  }
  clearCookie(c, app, BROWSER_SESSION_COOKIE);
  const next = upstream ?? back;
  let continueUrl: string | undefined;
  if (next) {
    if (frames.length === 0) return redirectTo(c, next);
    continueUrl = next;
  }
  return page(c, app, { step: "signed_out", frames, continueUrl, clientName: client?.name }, 200, {
    tenantUuid: client?.tenantUuid,
    frameTargets: frames.map((f) => f.src),
  });
}

/**
 * Front-Channel Logout 1.0 §2, §3: each client's `frontchannel_logout_uri`, with `iss` and `sid`
 * added to its query when the client registered `frontchannel_logout_session_required`; one frame
 * per distinct URL.
 */
function frontchannelFrames(
  issuer: string,
  clients: Array<{ sid: string; uri: string; sessionRequired: boolean; name: string }>,
): Array<{ src: string; name: string }> {
  const frames = new Map<string, string>();
  for (const f of clients) {
    const url = new URL(f.uri);
    if (f.sessionRequired) {
      url.searchParams.set("iss", issuer);
      url.searchParams.set("sid", f.sid);
    }
    frames.set(url.toString(), f.name);
  }
  return [...frames].map(([src, name]) => ({ src, name }));
}

const html = (description: string) => ({ description, contentType: "text/html" });
const responses = {
  200: html("The confirmation page (no id_token_hint, or one for another user), or the signed-out page"),
  303: "To the registered post_logout_redirect_uri, with `state`",
  400: html("Error page: invalid id_token_hint, unknown client, unregistered post_logout_redirect_uri, CSRF refused"),
  503: html("Error page: database outage"),
};

export function oidcLogoutRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page")
    .get(
      "/oidc/logout",
      {
        summary: "End-session endpoint (OpenID Connect RP-Initiated Logout 1.0 §2)",
        operationId: "getOidcLogout",
        responses,
      },
      ({ c, app }) => outagePage(app, () => logout(c, app, queryObject(c), false)),
    )
    .post(
      "/oidc/logout",
      {
        summary: "End-session endpoint, POST (§2), and the confirmation form's answer",
        operationId: "submitOidcLogout",
        bodyType: "form",
        body: z.record(z.string(), z.unknown()),
        responses,
      },
      ({ c, app, body }) => outagePage(app, () => logout(c, app, body, true)),
    );
}
