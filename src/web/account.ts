// The user's own account page (issue 25): `/0.1/oidc/account`, signed in with the login page's
// password and second step (web/flow/second-step.ts), then an HttpOnly, SameSite=Strict session cookie
// holding the Tessera token of that sign-in (15 minutes). The page enrols and removes TOTP (removal
// proven with a current code, throttled like logins) and registers, renames and removes passkeys;
// it lists the devices signed in (end one, or every other) and the applications the user allowed
// (withdraw one: its refresh tokens end), the upstream identities linked to the account (unlink one,
// unless it is the only way left to sign in), and sets the user's language (issue 43).
// Every form carries the CSRF token (double-submit cookie); the token must grant the self-service
// MFA ACL (`auth.users.me.mfa.#`, given by `mfa.self_service`).
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { ApiError, MfaRequired } from "../domain/errors.ts";
import { RouteGroup, type Env } from "../http/route.ts";
import type { MfaContent } from "./pages/oidc-login.ts";
import { completeProvenLogin, login } from "../services/auth/authentication.ts";
import { accountUser, confirmTotp, mfaStatus, removeTotp, startTotpEnrolment } from "../services/auth/mfa.ts";
import { requireOwnCode } from "../services/auth/mfa-login.ts";
import { openAccountSession, sealAccountSession } from "../services/auth/account-session.ts";
import { revokeToken } from "../services/auth/sessions.ts";
import { findValidToken } from "../services/auth/tokens.ts";
import {
  finishPasskeyRegistration,
  listPasskeys,
  passkeyJson,
  removePasskeys,
  renamePasskey,
  startPasskeyRegistration,
} from "../services/auth/webauthn.ts";
import type { UserRow } from "../services/identity/visibility.ts";
import { selfActor } from "../services/audit/record.ts";
import {
  browserOrigin,
  clearCookie,
  cookieOptions,
  CSRF_REFUSED,
  csrfMatches,
  csrfToken,
  GENERIC_FAILURE,
  outagePage,
  page as oidcPage,
  type Params,
  redirectTo,
  stringParams,
} from "./pages/browser.ts";
import { beginStep, fatal, type Flow, refusal, runStep, stepPasskeyOptions } from "./flow/second-step.ts";
import { requestRp } from "../http/public-urls.ts";
import { availableLocales, translate } from "../services/i18n/catalogue.ts";
import { matchLocale } from "../services/i18n/negotiate.ts";
import {
  endOwnSessions,
  ownConsents,
  ownSessions,
  setOwnLocale,
  withdrawConsent,
} from "../services/auth/self-service.ts";
import { msg, type PageText } from "./pages/language.ts";
import { LastSignInLink, ownLinks, unlinkOwn } from "../services/integrations/upstream-oidc/links.ts";

const SESSION_COOKIE = "tessera_account";
const SESSION_SECONDS = 900;
const ACTION = "account";
const OPTIONS = "account-passkey-options";
const TITLE = "account.title";

/** The cookie holds the sign-in's token sealed by the provider (services/auth/account-session.ts). */
async function setSession(c: Context<Env>, app: AppContext, token: string): Promise<void> {
  const sealed = await sealAccountSession(app, token, SESSION_SECONDS);
  setCookie(c, SESSION_COOKIE, sealed, { ...cookieOptions(c, app, SESSION_SECONDS), sameSite: "Strict" });
}

/**
 * The signed-in user, when the session cookie is one this page sealed at a sign-in here, and its
 * token is still valid and grants self-service MFA. A bare token in the cookie is no session.
 */
async function sessionUser(
  c: Context<Env>,
  app: AppContext,
): Promise<{ user: UserRow; token: string; sessionUuid: string } | null> {
  const sealed = getCookie(c, SESSION_COOKIE);
  if (!sealed || sealed.length > 2048) return null;
  const token = await openAccountSession(app, sealed);
  if (!token) return null;
  const found = await findValidToken(app, token);
  if (!found || !found.matcher.matches("auth.users.me.mfa.update")) return null;
  const user = await accountUser(app, found.authId);
  return user ? { user, token, sessionUuid: found.sessionUuid } : null;
}

const NO_SELF_SERVICE = "account.no_self_service";

/** The session starts when the sign-in's token grants self-service MFA; else it is revoked at once. */
async function startSession(c: Context<Env>, app: AppContext, token: string, csrf: string): Promise<Response> {
  const found = await findValidToken(app, token);
  if (!found?.matcher.matches("auth.users.me.mfa.update")) {
    await revokeToken(app, token);
    return loginPage(c, app, csrf, NO_SELF_SERVICE, 403);
  }
  await setSession(c, app, token);
  return redirectTo(c, ACTION);
}

/** A page of the account (the `mfa` step of the provider's pages), in the user's tenant's layout once signed in. */
const page = (
  c: Context<Env>,
  app: AppContext,
  content: Omit<MfaContent, "action" | "hidden"> & { hidden?: Record<string, string> },
  csrf: string,
  status: number,
  user?: UserRow,
) =>
  oidcPage(
    c,
    app,
    { step: "mfa", action: ACTION, hidden: { csrf_token: csrf, ...uiLocales(c) }, ...content },
    status,
    user ? { tenantUuid: user.tenantUuid, userLocale: user.locale } : {},
  );

/** `ui_locales` of the form a request posted (the page's forms carry it on). */
const postedLocales = new WeakMap<Context<Env>, string>();

/** The page's `ui_locales` (the switcher's link, or the form it posted), carried by every form. */
function uiLocales(c: Context<Env>): Record<string, string> {
  const value = c.req.query("ui_locales") ?? postedLocales.get(c);
  return value ? { ui_locales: value.slice(0, 200) } : {};
}

function accountFlow(c: Context<Env>, app: AppContext, csrf: string): Flow {
  return {
    clientId: null,
    action: ACTION,
    optionsAction: OPTIONS,
    hidden: { csrf_token: csrf },
    pageOptions: {},
    async finish(done) {
      const { token } = await completeProvenLogin(app, done.proven, accountLogin(c, app));
      return startSession(c, app, token.token, csrf);
    },
  };
}

/** The account's own token: 15 minutes, no refresh token. */
const accountLogin = (c: Context<Env>, app: AppContext) => ({
  ...browserOrigin(c, app),
  body: { expiration: SESSION_SECONDS },
  headers: {},
});

async function settingsPage(
  c: Context<Env>,
  app: AppContext,
  user: UserRow,
  csrf: string,
  extra: { message?: PageText; notice?: PageText } = {},
  status = 200,
  current?: string,
): Promise<Response> {
  const status_ = await mfaStatus(app, user);
  const devices = await ownSessions(app, user.uuid);
  return page(
    c,
    app,
    {
      title: TITLE,
      mode: "account",
      optionsAction: OPTIONS,
      ...extra,
      extra: {
        username: user.username ?? user.uuid,
        totp_confirmed: status_.totp.confirmed,
        totp_since: status_.totp.confirmed_at ?? "",
        recovery_codes_left: status_.recovery_codes_left,
        passkeys: (await listPasskeys(app, user)).map(passkeyJson),
        user_locale: user.locale ?? "",
        languages: availableLocales().map((tag) => ({ tag, name: translate(tag, "language.name") })),
        sessions: devices.map((d) => ({
          uuid: d.uuid,
          label: deviceLabel(d.userAgent),
          created_at: d.createdAt,
          current: d.uuid === current,
        })),
        applications: (await ownConsents(app, user.uuid)).map((a) => ({
          client_id: a.clientId,
          name: a.name,
          scopes: a.scopes.join(", "),
        })),
        links: (await ownLinks(app, user.uuid)).map((l) => ({
          provider: l.providerUuid,
          name: l.displayName,
          linked_at: l.createdAt,
        })),
      },
    },
    csrf,
    status,
    user,
  );
}

const loginPage = (c: Context<Env>, app: AppContext, csrf: string, message: PageText = "", status = 200) =>
  page(c, app, { title: "account.title_sign_in", mode: "account-login", message }, csrf, status);

const BROWSERS: Array<[RegExp, string]> = [
  [/Edg\//, "Edge"],
  [/Firefox\//, "Firefox"],
  [/Chrome\//, "Chrome"],
  [/Safari\//, "Safari"],
];

/** A device's name from its User-Agent: the browser and the system; empty when the page says "unknown". */
function deviceLabel(userAgent: string): string {
  const browser = BROWSERS.find(([re]) => re.test(userAgent))?.[1];
  const system = /Android|iPhone|iPad|Windows|Mac OS X|Linux/.exec(userAgent)?.[0]?.replace("Mac OS X", "macOS");
  if (!browser && !system) return userAgent.slice(0, 60);
  return [browser, system].filter(Boolean).join(" · ");
}

async function show(c: Context<Env>, app: AppContext): Promise<Response> {
  const csrf = await csrfToken(c, app);
  const session = await sessionUser(c, app);
  return session ? settingsPage(c, app, session.user, csrf, {}, 200, session.sessionUuid) : loginPage(c, app, csrf);
}

async function signIn(c: Context<Env>, app: AppContext, params: Params, csrf: string): Promise<Response> {
  if (!params.username || !params.password) return loginPage(c, app, csrf, GENERIC_FAILURE, 401);
  try {
    const { token } = await login(app, {
      ...accountLogin(c, app),
      login: params.username,
      password: params.password,
      mobile: false,
      interactive: true,
    });
    return await startSession(c, app, token.token, csrf);
  } catch (e) {
    if (e instanceof MfaRequired && e.proven) return beginStep(c, app, accountFlow(c, app, csrf), e);
    return refusal(c, app, e, async () => loginPage(c, app, csrf, GENERIC_FAILURE, 401));
  }
}

async function submit(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  if (!(await csrfMatches(c, app, params.csrf_token))) return fatal(c, app, CSRF_REFUSED, 400);
  const csrf = params.csrf_token!;
  if (params.ui_locales) postedLocales.set(c, params.ui_locales);
  if (params.step === "sign-in") return signIn(c, app, params, csrf);
  if (params.pending) return runStep(c, app, accountFlow(c, app, csrf), params);
  const session = await sessionUser(c, app);
  if (!session) return loginPage(c, app, csrf, "account.session_ended", 401);
  const { user } = session;
  // The audit trail's actor: the user on their own account page, from this browser.
  const actor = selfActor(user, browserOrigin(c, app));
  const again = (extra: { message?: PageText; notice?: PageText }, status = 200, who = user) =>
    settingsPage(c, app, who, csrf, extra, status, session.sessionUuid);
  try {
    switch (params.step) {
      case "sign-out":
        await revokeToken(app, session.token);
        clearCookie(c, app, SESSION_COOKIE);
        return loginPage(c, app, csrf, "", 200);
      case "totp-start": {
        const e = await startTotpEnrolment(app, user);
        return page(
          c,
          app,
          { title: "account.title_totp", mode: "enrol", qrCode: e.qr_code, secret: e.secret },
          csrf,
          200,
          user,
        );
      }
      case "confirm": {
        const { recovery_codes } = await confirmTotp(app, user, (params.code ?? "").trim(), actor);
        return page(
          c,
          app,
          {
            title: "mfa.title_codes",
            mode: "codes",
            notice: "mfa.on",
            recoveryCodes: recovery_codes,
          },
          csrf,
          200,
          user,
        );
      }
      case "finish":
        return redirectTo(c, ACTION);
      case "totp-remove":
        await requireOwnCode(app, user, (params.code ?? "").trim(), requestAddress(c, app));
        await removeTotp(app, user, actor);
        return again({ notice: "account.totp_removed" });
      case "passkey-register": {
        const name = (params.name ?? "").trim().slice(0, 64) || "Passkey";
        await finishPasskeyRegistration(
          app,
          user,
          requestRp(c, app),
          {
            challenge_id: params.challenge_id ?? "",
            name,
            credential: JSON.parse(params.credential || "null"),
          },
          actor,
        );
        return again({ notice: msg("account.passkey_added_notice", { name }) });
      }
      case "passkey-rename": {
        const name = (params.name ?? "").trim();
        if (!name || name.length > 64) return again({ message: "account.passkey_name_length" }, 400);
        await renamePasskey(app, user, params.passkey ?? "", name, actor);
        return again({ notice: "account.passkey_renamed" });
      }
      case "passkey-remove":
        await removePasskeys(app, user, params.passkey ?? "", actor);
        return again({ notice: "account.passkey_removed" });
      case "locale": {
        // Empty: none chosen (the browser's language then); else one of the catalogues' languages.
        const chosen = params.locale ? matchLocale(params.locale) : null;
        if (params.locale && chosen?.toLowerCase() !== params.locale.toLowerCase())
          return again({ message: "account.unknown_action" }, 400);
        await setOwnLocale(app, user, chosen, actor);
        postedLocales.delete(c); // the choice just made shows at once
        return again({ notice: "account.language_saved" }, 200, { ...user, locale: chosen });
      }
      case "session-end": {
        const ended = await endOwnSessions(app, user, { one: params.session ?? "" }, actor);
        if (params.session === session.sessionUuid) return loginPage(c, app, csrf, "", 200);
        return again({ notice: ended ? "account.session_ended_notice" : "" });
      }
      case "session-end-others": {
        const count = await endOwnSessions(app, user, { allBut: session.sessionUuid }, actor);
        return again({ notice: msg("account.sessions_ended_notice", { count }) });
      }
      case "consent-withdraw": {
        const name = await withdrawConsent(app, user, (params.client ?? "").slice(0, 64), actor);
        return again(name ? { notice: msg("account.application_withdrawn", { name }) } : {});
      }
      case "link-remove": {
        // Refused when it is the user's only way to sign in (services/integrations/upstream-oidc/links.ts).
        try {
          const name = await unlinkOwn(app, user, (params.provider ?? "").slice(0, 64), actor);
          return again(name ? { notice: msg("account.link_removed", { name }) } : {});
        } catch (e) {
          if (!(e instanceof LastSignInLink)) throw e;
          return again({ message: msg("account.link_last", { name: e.displayName }) }, 409);
        }
      }
      default:
        return again({ message: "account.unknown_action" }, 400);
    }
  } catch (e) {
    if (e instanceof SyntaxError) return again({ message: "account.passkey_not_added" }, 400);
    if (!(e instanceof ApiError)) throw e;
    return refusal(c, app, e, () =>
      again(
        {
          message:
            params.step === "confirm" || params.step === "totp-remove"
              ? "mfa.wrong_code"
              : params.step === "passkey-register"
                ? "account.passkey_not_added"
                : e.message,
        },
        400,
      ),
    );
  }
}

function requestAddress(c: Context<Env>, app: AppContext) {
  const origin = browserOrigin(c, app);
  return { address: origin.remoteAddr, forwarded: origin.forwarded };
}

/** Passkey options for the account page: registration (signed in) or the sign-in's second step (`pending`). */
async function options(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  if (!(await csrfMatches(c, app, params.csrf_token))) return c.json({ error: "invalid_request" }, 400);
  if (params.pending) return stepPasskeyOptions(c, app, accountFlow(c, app, params.csrf_token!), params);
  const session = await sessionUser(c, app);
  if (!session) return c.json({ error: "login_required" }, 401);
  return c.json(await startPasskeyRegistration(app, session.user, requestRp(c, app)));
}

const formBody = z.record(z.string(), z.unknown());
const html = (description: string) => ({ description, contentType: "text/html" });

export function accountRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page")
    .get(
      `/oidc/${ACTION}`,
      {
        summary: "The user's own sign-in settings page (TOTP, passkeys); its sign-in form when not signed in",
        operationId: "getAccountPage",
        responses: { 200: html("The settings page, or its sign-in form"), 503: html("Database outage") },
      },
      ({ c, app }) => outagePage(app, () => show(c, app), c),
    )
    .post(
      `/oidc/${ACTION}`,
      {
        summary:
          "The account page's forms: sign-in (and its second step), TOTP enrolment and removal, passkey registration, rename, removal, sign-out",
        operationId: "submitAccountPage",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("The next page"),
          303: "Signed in: back to the settings page",
          400: html("CSRF failure, or the page with the error"),
          401: html("Wrong credentials or code, or the session ended"),
          429: html("Too many attempts"),
          503: html("Database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submit(c, app, body), c, body),
    )
    .post(
      `/oidc/${OPTIONS}`,
      {
        summary: "WebAuthn options for the account page: registration, or the sign-in's passkey step",
        operationId: "getAccountPasskeyOptions",
        door: "api", // JSON for the page's script
        bodyType: "form",
        body: formBody,
        responses: { 200: "`{challenge_id, options}`", 400: "`{error}`", 401: "`{error}`: not signed in" },
      },
      ({ c, app, body }) => options(c, app, body),
    );
}
