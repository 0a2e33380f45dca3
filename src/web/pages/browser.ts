// What the provider's browser pages share (authorize, consent, SAML step, logout): their
// parameters, CSRF, cookies scoped to the issuer's path, and the outage page.
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { AppContext } from "../../boot/context.ts";
import { databaseFailure } from "../../db/failures.ts";
import { ApiError, SecondFactorLocked, TooManySessions } from "../../domain/errors.ts";
import { apiErrorOf } from "../../http/error-response.ts";
import type { Env } from "../../http/route.ts";
import { requestOrigin } from "../../http/request-origin.ts";
import { renderPage, type PageOptions, type PageStep } from "./oidc-login.ts";
import {
  BROWSER_SESSION_COOKIE,
  type BrowserSessionRow,
  findBrowserSession,
  sessionServes,
} from "../../services/oidc/browser-session.ts";
import { serviceMacKey } from "../../services/oidc/keys.ts";
import type { BrowserOrigin } from "../../services/oidc/sign-in.ts";
import { requestIssuer } from "../../http/public-urls.ts";
import { type LocaleHints, languageLinks, type PageText, requestLocale } from "./language.ts";
import { brandingFresh } from "../../services/identity/branding.ts";

export type Params = Record<string, string | undefined>;

export function stringParams(raw: Record<string, unknown>): Params {
  const out: Params = {};
  for (const [k, v] of Object.entries(raw))
    if (typeof v === "string") out[k] = v;
    else if (Array.isArray(v) && typeof v[0] === "string") out[k] = v[0];
  return out;
}

/** The parameters named, carried through a form as hidden fields, with the CSRF token. */
export function hiddenFields(p: Params, names: readonly string[], csrf: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) if (p[name] !== undefined) out[name] = p[name]!;
  out.csrf_token = csrf;
  return out;
}

/** Cookie attributes (OIDC pages): HttpOnly, SameSite=Lax, Secure behind https, path = the issuer's. */
export function cookieOptions(c: Context<Env>, app: AppContext, maxAge?: number) {
  const issuer = new URL(requestIssuer(c, app));
  return {
    httpOnly: true,
    sameSite: "Lax" as const,
    secure: issuer.protocol === "https:",
    path: issuer.pathname,
    ...(maxAge !== undefined ? { maxAge } : {}),
  };
}

/**
 * The CSRF cookie; its value also binds a pending second step to the browser (web/flow/second-step.ts).
 * Behind https it has the `__Host-` prefix (RFC 6265bis §4.1.3.2): Secure, Path=/ and no Domain, so
 * neither a sibling subdomain nor a plain-http response can set it.
 */
const CSRF_COOKIE = "tessera_oidc_csrf";
const HOST_PREFIX = "__Host-";
const TOKEN_SYNTAX = /^([A-Za-z0-9_-]{43})\.([A-Za-z0-9_-]{43})$/;

const overHttps = (c: Context<Env>, app: AppContext) => new URL(requestIssuer(c, app)).protocol === "https:";
const csrfCookieName = (c: Context<Env>, app: AppContext) =>
  overHttps(c, app) ? `${HOST_PREFIX}${CSRF_COOKIE}` : CSRF_COOKIE;

/** The browser's CSRF cookie as sent (checked by csrfMatches before it is trusted). */
export const csrfCookie = (c: Context<Env>, app: AppContext) => getCookie(c, csrfCookieName(c, app));

/** The MAC of a token's random part under the service's key (routes cannot forge what they did not mint). */
const csrfMac = (key: Buffer, random: string) =>
  createHmac("sha256", key).update(`hosted-page-csrf\n${random}`).digest("base64url");

/** A token minted by this service: `{random}.{HMAC(service key, random)}`, checked in constant time. */
function mintedHere(key: Buffer, token: string | undefined): boolean {
  const m = token ? TOKEN_SYNTAX.exec(token) : null;
  return !!m && timingSafeEqual(Buffer.from(csrfMac(key, m[1]!)), Buffer.from(m[2]!));
}

/**
 * CSRF (OWASP "signed double-submit cookie"): a random value and its HMAC under a key only the
 * service holds (services/oidc/keys.ts serviceMacKey: derived from the stored signing key, so every
 * instance shares it), in an HttpOnly, SameSite=Lax cookie and in the form. A pair planted by
 * someone without the key is refused; a token minted before a key rotation is replaced.
 */
export async function csrfToken(c: Context<Env>, app: AppContext): Promise<string> {
  const key = await serviceMacKey(app);
  const existing = csrfCookie(c, app);
  if (mintedHere(key, existing)) return existing!;
  const random = randomBytes(32).toString("base64url");
  const value = `${random}.${csrfMac(key, random)}`;
  const https = overHttps(c, app);
  setCookie(c, csrfCookieName(c, app), value, { ...cookieOptions(c, app), ...(https ? { path: "/" } : {}) });
  return value;
}

/** The form's token is the cookie's, and the service minted it. */
export async function csrfMatches(c: Context<Env>, app: AppContext, presented: string | undefined): Promise<boolean> {
  const cookie = csrfCookie(c, app);
  if (!cookie || !presented || cookie.length !== presented.length) return false;
  if (!timingSafeEqual(Buffer.from(cookie), Buffer.from(presented))) return false;
  return mintedHere(await serviceMacKey(app), cookie);
}

// The pages' messages are catalogue keys (templates/locales/*.json), translated as the page renders.
export const CSRF_REFUSED = "error.csrf";

export function clearCookie(c: Context<Env>, app: AppContext, name: string): void {
  deleteCookie(c, name, cookieOptions(c, app));
}

/** The cookies the handler set on `c`, for a response built apart from it. */
export function pendingCookies(c: Context<Env>): Headers {
  const h = new Headers();
  for (const [k, v] of c.res.headers) if (k === "set-cookie") h.append(k, v);
  return h;
}

/** A page, with the cookies the handler set, in the language negotiated for the request (web/pages/language.ts). */
export function page(
  c: Context<Env>,
  app: AppContext,
  step: PageStep,
  status: number,
  opts: Omit<PageOptions, "headers" | "locale" | "languages"> & { userLocale?: string | null } = {},
): Response {
  const { userLocale, ...rest } = opts;
  const locale = requestLocale(c, app, {
    uiLocales: "hidden" in step ? step.hidden.ui_locales : step.step === "device_code" ? step.uiLocales : undefined,
    userLocale,
    tenantUuid: opts.tenantUuid,
  });
  return renderPage(app, step, status, {
    ...rest,
    path: new URL(c.req.url).pathname,
    locale,
    languages: languageLinks(c, locale),
    headers: pendingCookies(c),
  });
}

/** A 303 redirect, with the cookies the handler set. */
export function redirectTo(c: Context<Env>, location: string): Response {
  const headers = pendingCookies(c);
  headers.set("Location", location);
  headers.set("Cache-Control", "no-store");
  return new Response(null, { status: 303, headers });
}

export function browserOrigin(c: Context<Env>, app: AppContext): BrowserOrigin {
  const origin = requestOrigin(c, app.config.rest_api.trusted_proxies);
  return { userAgent: c.req.header("User-Agent") ?? "", remoteAddr: origin.address, forwarded: origin.forwarded };
}

export type BrowserSession = BrowserSessionRow & { tenantUuid: string };

/**
 * The browser's session (OIDC Core §3.1.2.3 single sign-on) when it may stand for a sign-in to a
 * client of `tenantUuid`: its user is of that tenant or below, and it is recent enough for `maxAge`.
 */
export async function browserSessionFor(
  c: Context<Env>,
  app: AppContext,
  tenantUuid: string,
  maxAge: number | null,
): Promise<BrowserSession | null> {
  const session = await findBrowserSession(app, getCookie(c, BROWSER_SESSION_COOKIE));
  if (!session || !(await sessionServes(app, session, tenantUuid, maxAge))) return null;
  return session;
}

/** The one message for every refused sign-in (as POST /0.1/token's one 401): it says nothing of why. */
export const GENERIC_FAILURE = "error.generic_failure";
export const TOO_MANY = "error.too_many";
export const SECOND_FACTOR_LOCKED = "error.second_factor_locked";
/** The session cap (`max_user_concurrent_sessions`), not an attempt count: waiting does not help. */
export const SESSION_CAP = "error.session_cap";

/**
 * A sign-in the login refused, as the page shows it with the form again: too many attempts (429)
 * or the one generic failure (401). A failing service (5xx) or anything else is thrown on (outagePage).
 */
export function signInRefusal(e: unknown): { message: PageText; status: number } {
  if (!(e instanceof ApiError) || e.status >= 500) throw e;
  if (e instanceof SecondFactorLocked) return { message: SECOND_FACTOR_LOCKED, status: 429 };
  if (e instanceof TooManySessions) return { message: SESSION_CAP, status: 429 };
  return e.status === 429 ? { message: TOO_MANY, status: 429 } : { message: GENERIC_FAILURE, status: 401 };
}

export const UNAVAILABLE = "error.unavailable";

/**
 * A database outage (or another service failing: a 5xx) on a page is an error page (503), never a
 * JSON body, a half-issued code or a half-done approval. `pageErrorResponse` is the page door's
 * error exit (http/doors.ts): whatever reached it (the deadline, input the pipeline refused) is a page.
 */
export function pageErrorResponse(c: Context, err: unknown, app: AppContext): Response {
  const e = apiErrorOf(c, err, app.log);
  const opts = { locale: requestLocale(c, app) };
  if (e.status === 503) return renderPage(app, { step: "error", message: UNAVAILABLE }, 503, opts);
  if (e.status >= 500) return renderPage(app, { step: "error", message: "error.internal" }, 500, opts);
  return renderPage(app, { step: "error", message: e.message }, e.status, opts);
}

export async function outagePage(
  app: AppContext,
  handler: () => Promise<Response>,
  c?: Context,
  form?: Record<string, unknown>,
): Promise<Response> {
  // The outage page's language: the request's, with the `ui_locales` its form carried.
  const hints: LocaleHints = { uiLocales: typeof form?.ui_locales === "string" ? form.ui_locales : undefined };
  try {
    await brandingFresh(app); // the tenants' branding, as the page will show it
    return await handler();
  } catch (e) {
    if (databaseFailure(e) || (e instanceof ApiError && e.status >= 500))
      return renderPage(app, { step: "error", message: UNAVAILABLE }, 503, {
        ...(c ? { locale: requestLocale(c, app, hints) } : {}),
      });
    throw e;
  }
}
