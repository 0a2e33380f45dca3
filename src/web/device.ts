// The device flow's verification page (RFC 8628 §3.3), steps of the provider's page system (the
// layout, per-tenant layouts, CSRF, cookies and outage page of web/pages/browser.ts): GET asks for the
// user code (or, with `?user_code=`, shows the request to allow); POST signs in as POST /0.1/token
// does — or continues as the browser session's user (single sign-on) — and allows or denies.
// Looking a code up is throttled as a login is: a wrong code counts as a failed login from the
// address (§5.1 brute forcing), and a locked address gets no answer about codes.
// A user with a TOTP factor is asked for a code with the password (the form again, with a code
// field: nothing is kept between the two submissions); a user whose only factor is a passkey, or
// who must first enrol one, is refused with a message saying why and where to go (the account
// page): this page has no script, so it runs no WebAuthn ceremony.
import type { Context } from "hono";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { inTransaction } from "../db/tx.ts";
import { ApiError, MfaRequired } from "../domain/errors.ts";
import { requestOrigin } from "../http/request-origin.ts";
import { queryObject, RouteGroup, type Env } from "../http/route.ts";
import { assertNotThrottled, countFailure, type ThrottleSubject } from "../services/auth/login-throttle.ts";
import { sessionUserName } from "../services/oidc/browser-session.ts";
import {
  approveDevice,
  denyDevice,
  type DeviceSignIn,
  formatUserCode,
  normaliseUserCode,
  pendingRequest,
} from "../services/oidc/device.ts";
import {
  browserOrigin,
  browserSessionFor,
  CSRF_REFUSED,
  csrfMatches,
  csrfToken,
  GENERIC_FAILURE,
  outagePage,
  page,
  signInRefusal,
  stringParams,
  TOO_MANY,
  type Params,
} from "./pages/browser.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { msg, type PageText, scopeText } from "./pages/language.ts";

const BAD_CODE = "device.bad_code";
const CODE_NEEDED = "device.code_needed";
const accountPage = (c: Context<Env>, app: AppContext) => `${requestIssuer(c, app)}/account`;

/** Why a user with a second factor cannot finish here, or null when a code will do (MfaRequired, RFC 8176). */
function secondFactorBlocked(c: Context<Env>, app: AppContext, e: MfaRequired): PageText | null {
  const url = accountPage(c, app);
  if (e.changePassword) return msg("device.blocked_password", { url });
  if (e.enrol) return msg("device.blocked_enrol", { url });
  const methods = (e.details as { methods?: string[] }).methods ?? [];
  if (methods.includes("totp")) return null;
  return msg("device.blocked_passkey", { url });
}

type Request = NonNullable<Awaited<ReturnType<typeof pendingRequest>>>;

function subjectOf(c: Context<Env>, app: AppContext): ThrottleSubject {
  const origin = requestOrigin(c, app.config.rest_api.trusted_proxies);
  return { action: "login", login: null, remoteAddr: origin.address, forwarded: origin.forwarded };
}

/** A pending request by the code as typed; a miss is counted against the address. Throws 429 when locked. */
async function lookUp(c: Context<Env>, app: AppContext, typed: string) {
  const subject = subjectOf(c, app);
  await assertNotThrottled(app, subject, "oidc_device");
  const code = normaliseUserCode(typed);
  const request = code ? await pendingRequest(app, code) : null;
  if (!request) await inTransaction(app, (tx) => countFailure(app, tx, subject));
  return request;
}

const codeStep = (c: Context<Env>, app: AppContext, status: number, message?: PageText, userCode?: string) =>
  page(c, app, { step: "device_code", message, userCode, uiLocales: uiLocalesOf(c) }, status);

/** `ui_locales` of the request, carried by the code form. */
const uiLocalesOf = (c: Context<Env>) => c.req.query("ui_locales");

const done = (c: Context<Env>, app: AppContext, request: Request, heading: PageText, message: PageText) =>
  page(c, app, { step: "device_done", heading, message }, 200, { tenantUuid: request.client.tenantUuid });

/** Errors of the page are pages: a locked address (429) the code step, an outage the error page (503). */
function devicePage(c: Context<Env>, app: AppContext, handler: () => Promise<Response>): Promise<Response> {
  return outagePage(
    app,
    async () => {
      try {
        return await handler();
      } catch (e) {
        if (e instanceof ApiError && e.status === 429) return codeStep(c, app, 429, TOO_MANY);
        throw e;
      }
    },
    c,
  );
}

/**
 * Step two: the client, the code to compare with the device (§5.4 remote phishing), what a
 * third-party client asks (in the consent screen's words), then Allow or Deny — as the browser
 * session's user when there is one serving the client's tenant (OIDC Core §3.1.2.3; the person
 * still answers explicitly), else with the password form (always with `account=other`).
 */
async function confirmStep(
  c: Context<Env>,
  app: AppContext,
  request: Request,
  p: Params,
  extra: { message?: PageText; status?: number; askCode?: boolean } = {},
): Promise<Response> {
  const { client } = request;
  const userCode = formatUserCode(request.userCode);
  const session = p.account === "other" ? null : await browserSessionFor(c, app, client.tenantUuid, null);
  const hidden: Record<string, string> = { csrf_token: await csrfToken(c, app), user_code: userCode };
  if (p.ui_locales) hidden.ui_locales = p.ui_locales.slice(0, 200);
  if (session) hidden.continue_as = session.id;
  else if (p.account === "other") hidden.account = "other";
  return page(
    c,
    app,
    {
      step: "device_confirm",
      clientName: client.name,
      userCode,
      scopes: client.firstParty ? [] : request.scope.map(scopeText),
      hidden,
      message: extra.message,
      username: p.username,
      askCode: extra.askCode,
      ...(session
        ? {
            continueAs: await sessionUserName(app, session),
            otherAccount: `device?${new URLSearchParams({ user_code: userCode, account: "other" })}`,
          }
        : {}),
    },
    extra.status ?? 200,
    { tenantUuid: client.tenantUuid },
  );
}

async function showPage(c: Context<Env>, app: AppContext): Promise<Response> {
  const p = stringParams(queryObject(c));
  const typed = p.user_code;
  if (typed === undefined || typed === "") return codeStep(c, app, 200);
  if (typed.length > 64) return codeStep(c, app, 400, BAD_CODE);
  const request = await lookUp(c, app, typed);
  if (!request) return codeStep(c, app, 400, BAD_CODE, typed);
  return confirmStep(c, app, request, { account: p.account, ui_locales: p.ui_locales });
}

async function submitForm(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const p = stringParams(body);
  if (!(await csrfMatches(c, app, p.csrf_token))) return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const request = await lookUp(c, app, (p.user_code ?? "").slice(0, 64));
  if (!request) return codeStep(c, app, 400, BAD_CODE);
  const code = request.userCode;
  if (p.action === "deny") {
    await denyDevice(app, code);
    return done(c, app, request, "device.denied_heading", "device.denied");
  }
  const again = (message: PageText, status: number, askCode = (p.mfa_code ?? "") !== "") =>
    confirmStep(c, app, request, p, { message, status, askCode });
  let how: DeviceSignIn;
  if (p.continue_as !== undefined) {
    // Single sign-on: the session shown on the page must still be this browser's and serve the client.
    const session = await browserSessionFor(c, app, request.client.tenantUuid, null);
    if (!session || session.id !== p.continue_as) return again("device.no_longer_signed_in", 401);
    how = { kind: "session", session, origin: browserOrigin(c, app) };
  } else {
    if (!p.username || !p.password) return again(GENERIC_FAILURE, 401);
    how = {
      kind: "password",
      creds: { login: p.username, password: p.password, mfaCode: p.mfa_code || undefined, ...browserOrigin(c, app) },
    };
  }
  let approved: boolean;
  try {
    approved = await approveDevice(app, code, how);
  } catch (e) {
    // The password was right; the second factor is due (RFC 8628 §3.3 leaves the sign-in to the server).
    if (e instanceof MfaRequired && e.proven) {
      const blocked = secondFactorBlocked(c, app, e);
      return blocked ? again(blocked, 401, false) : again(CODE_NEEDED, 401, true);
    }
    const refused = signInRefusal(e);
    return again(refused.message, refused.status);
  }
  if (!approved) return codeStep(c, app, 400, BAD_CODE);
  return done(c, app, request, "device.connected_heading", "device.connected");
}

const html = (description: string) => ({ description, contentType: "text/html" });
const pageResponses = (extra: Record<number, string>) => ({
  200: html("The page"),
  400: html("The page with an error: unknown or expired code, or a form that did not come from it"),
  429: html("Too many attempts from this address"),
  503: html("Error page: database outage (nothing approved)"),
  ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, html(v)])),
});

export function oidcDeviceRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page")
    .get(
      "/oidc/device",
      {
        summary: "Device flow verification page (RFC 8628 §3.3): enter the code a device shows",
        operationId: "getOidcDevicePage",
        responses: pageResponses({}),
      },
      ({ c, app }) => devicePage(c, app, () => showPage(c, app)),
    )
    .post(
      "/oidc/device",
      {
        summary:
          "The verification page's form: signs in as POST /0.1/token does (or as the browser session's user), then allows or denies the device",
        operationId: "submitOidcDevicePage",
        bodyType: "form",
        body: z.record(z.string(), z.unknown()),
        responses: pageResponses({ 401: "The form again, with the generic sign-in failure" }),
      },
      ({ c, app, body }) => devicePage(c, app, () => submitForm(c, app, body)),
    );
}
