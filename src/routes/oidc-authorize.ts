// The authorization endpoint and its hosted login page (OIDC Core §3.1.2, RFC 6749 §4.1.1).
// GET shows the form for a valid request; POST signs in and redirects back with a code.
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { AppContext } from "../context.ts";
import { databaseFailure } from "../db/failures.ts";
import { ApiError } from "../domain/errors.ts";
import { requestOrigin } from "../http/request-origin.ts";
import { queryObject, RouteGroup, type Env } from "../http/route.ts";
import { renderLoginPage } from "../pages/oidc-login.ts";
import {
  authorizationRedirect,
  checkAuthorizationRequest,
  REQUEST_PARAMS,
  type AuthorizeCheck,
} from "../services/oidc/authorize.ts";
import { signInForCode } from "../services/oidc/sign-in.ts";
import { requestIssuer } from "./oidc.ts";

const CSRF_COOKIE = "tessera_oidc_csrf";
/** The one message for every refused sign-in (as POST /0.1/token's one 401): it says nothing of why. */
const GENERIC_FAILURE = "Wrong username or password.";

type Params = Record<string, string | undefined>;

function stringParams(raw: Record<string, unknown>): Params {
  const out: Params = {};
  for (const [k, v] of Object.entries(raw))
    if (typeof v === "string") out[k] = v;
    else if (Array.isArray(v) && typeof v[0] === "string") out[k] = v[0];
  return out;
}

/** The request's own parameters, carried through the form as hidden fields. */
function hiddenFields(p: Params, csrf: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of REQUEST_PARAMS) if (p[name] !== undefined) out[name] = p[name]!;
  out.csrf_token = csrf;
  return out;
}

/**
 * CSRF (OWASP double-submit cookie): a random value in an HttpOnly, SameSite=Lax cookie scoped to
 * this directory, and the same in the form. Secure when the page is served over https.
 */
function csrfCookie(c: Context<Env>, app: AppContext): string {
  const existing = getCookie(c, CSRF_COOKIE);
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
  const value = randomBytes(32).toString("base64url");
  const secure = requestIssuer(c, app).startsWith("https:");
  setCookie(c, CSRF_COOKIE, value, { httpOnly: true, sameSite: "Lax", secure });
  return value;
}

function csrfMatches(c: Context<Env>, presented: string | undefined): boolean {
  const cookie = getCookie(c, CSRF_COOKIE);
  if (!cookie || !presented || cookie.length !== presented.length) return false;
  return timingSafeEqual(Buffer.from(cookie), Buffer.from(presented));
}

function answerCheck(c: Context<Env>, app: AppContext, check: Exclude<AuthorizeCheck, { kind: "ok" }>): Response {
  if (check.kind === "page_error") return renderLoginPage({ fatal: true, message: check.message }, 400);
  return c.redirect(
    authorizationRedirect(check.redirectUri, {
      error: check.error,
      error_description: check.description,
      state: check.state,
      iss: requestIssuer(c, app),
    }),
    303,
  );
}

const UNAVAILABLE = "Signing in is not possible right now. Try again in a moment.";

/** A database outage on the login page is an error page (503), never a JSON body or a half-issued code. */
async function outagePage(handler: () => Promise<Response>): Promise<Response> {
  try {
    return await handler();
  } catch (e) {
    if (databaseFailure(e)) return renderLoginPage({ fatal: true, message: UNAVAILABLE }, 503);
    throw e;
  }
}

const formBody = z.record(z.string(), z.unknown());

async function showLoginPage(c: Context<Env>, app: AppContext): Promise<Response> {
  const params = stringParams(queryObject(c));
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const csrf = csrfCookie(c, app);
  const page = renderLoginPage(
    { clientName: check.client.name, hidden: hiddenFields(params, csrf), redirectUri: check.request.redirectUri },
    200,
  );
  for (const [k, v] of c.res.headers) if (k === "set-cookie") page.headers.append(k, v);
  return page;
}

async function submitLoginForm(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  if (!csrfMatches(c, params.csrf_token))
    return renderLoginPage(
      {
        fatal: true,
        message: "This form has expired or did not come from this site. Go back to the application and start again.",
      },
      400,
    );
  const check = await checkAuthorizationRequest(app, params);
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const again = (message: string, status: number) =>
    renderLoginPage(
      {
        clientName: check.client.name,
        message,
        username: params.username ?? "",
        hidden: hiddenFields(params, params.csrf_token!),
        redirectUri: check.request.redirectUri,
      },
      status,
    );
  if (!params.username || !params.password) return again(GENERIC_FAILURE, 401);
  const origin = requestOrigin(c, app.config.rest_api.trusted_proxies);
  let code: string;
  try {
    code = await signInForCode(app, check.client, check.request, {
      login: params.username,
      password: params.password,
      userAgent: c.req.header("User-Agent") ?? "",
      remoteAddr: origin.address,
      forwarded: origin.forwarded,
      headers: {},
    });
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    if (e.status === 429) return again("Too many attempts. Wait a moment, then try again.", 429);
    if (e.status >= 500) return renderLoginPage({ fatal: true, message: UNAVAILABLE }, 503);
    return again(GENERIC_FAILURE, 401);
  }
  return c.redirect(
    authorizationRedirect(check.request.redirectUri, { code, state: check.request.state, iss: requestIssuer(c, app) }),
    303,
  );
}

export function oidcAuthorizeRoutes(): RouteGroup {
  return new RouteGroup("oidc")
    .get(
      "/oidc/authorize",
      {
        summary: "Authorization endpoint: the hosted login page (OIDC Core §3.1.2)",
        operationId: "getOidcAuthorize",
        responses: {
          200: { description: "The login page", contentType: "text/html" },
          303: "Back to the client with an error (RFC 6749 §4.1.2.1)",
          400: {
            description: "Error page: unknown client or unregistered redirect URI (never redirected)",
            contentType: "text/html",
          },
          503: { description: "Error page: database outage", contentType: "text/html" },
        },
      },
      ({ c, app }) => outagePage(() => showLoginPage(c, app)),
    )
    .post(
      "/oidc/authorize",
      {
        summary:
          "The login form's submission: signs in as POST /0.1/token does, then redirects to the client with a code",
        operationId: "submitOidcLogin",
        bodyType: "form",
        body: formBody,
        responses: {
          303: "Back to the client with `code`, `state` and `iss` (RFC 9207)",
          400: { description: "Error page", contentType: "text/html" },
          401: { description: "The form again, with the generic failure", contentType: "text/html" },
          429: { description: "Too many attempts", contentType: "text/html" },
          503: { description: "Sign-in unavailable (database outage): no code issued", contentType: "text/html" },
        },
      },
      ({ c, app, body }) => outagePage(() => submitLoginForm(c, app, body)),
    );
}
