// The pages the mailed links lead to (issue 43), in the user's language:
//   - a new password from a reset link: GET /0.1/pages/password-reset?token=…&user_uuid=… (the link
//     of the stock reset mail) sends the browser on to the provider's page {issuer}/password-reset,
//     which shows the password rules that apply to this user (their tenant's minimum length, not
//     their username or address, not a common password) and sets the password as
//     POST /0.1/users/password/reset does with the mailed token (single use; every session ends);
//   - registration, when the service allows it (`enabled_http_plugins.user_registration`):
//     {issuer}/sign-up, the form of POST /0.1/users/register (a new tenant and user, then the
//     confirmation mail), with the password rules shown;
//   - an address confirmation: {issuer}/email-confirmation?email_uuid=…&token=… (the link of the
//     stock confirmation mail) shows the address and a Confirm button; the address is confirmed by
//     the form, not by opening the link, so a mail scanner following links confirms nothing.
// Only the mailed single-purpose tokens act here; each form also carries the CSRF token.
import type { Context } from "hono";
import { eq } from "drizzle-orm";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { emails, users } from "../db/schema.ts";
import type { Caller } from "../domain/caller.ts";
import { ApiError } from "../domain/errors.ts";
import { isUuid } from "../domain/validate.ts";
import { resolveCaller } from "../http/auth.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { queryObject, RouteGroup, type Env } from "../http/route.ts";
import { resetPassword } from "../services/auth/password-reset.ts";
import { findValidToken, isEmailedToken } from "../services/auth/tokens.ts";
import { confirmEmail } from "../services/identity/emails.ts";
import { registerUser } from "../services/identity/registration.ts";
import { requestConnection } from "../http/public-urls.ts";
import type { UserRow } from "../services/identity/visibility.ts";
import type { PageText } from "./pages/language.ts";
import { passwordRefusalText, passwordRules } from "./pages/password-rules.ts";
import {
  CSRF_REFUSED,
  csrfMatches,
  csrfToken,
  outagePage,
  page,
  type Params,
  redirectTo,
  stringParams,
} from "./pages/browser.ts";

const RESET = "password-reset";
// Not `register`: that is the OAuth dynamic client registration endpoint (RFC 7591).
const REGISTER = "sign-up";
const CONFIRM = "email-confirmation";

/** The caller of a mailed single-purpose token granting exactly `access`, or null. */
async function mailedCaller(app: AppContext, token: string | undefined, access: string): Promise<Caller | null> {
  if (!token || !isUuid(token)) return null;
  const found = await findValidToken(app, token);
  if (!found) return null;
  const caller = await resolveCaller(app, found, undefined);
  return isEmailedToken(caller, access) ? caller : null;
}

const resetAccess = (userUuid: string) => `auth.users.password.reset.${userUuid}.create`;
const confirmAccess = (emailUuid: string) => `auth.emails.${emailUuid}.confirm.edit`;

async function resetUser(app: AppContext, p: Params): Promise<{ caller: Caller; user: UserRow } | null> {
  if (!p.user_uuid || !isUuid(p.user_uuid)) return null;
  const caller = await mailedCaller(app, p.token, resetAccess(p.user_uuid));
  if (!caller) return null;
  const [user] = await app.db.select().from(users).where(eq(users.uuid, p.user_uuid));
  return user ? { caller, user } : null;
}

/** The fields every form of these pages carries: the mailed link's own, `ui_locales`, the CSRF token. */
function hidden(p: Params, names: string[], csrf: string): Record<string, string> {
  const out: Record<string, string> = { csrf_token: csrf };
  for (const name of [...names, "ui_locales"]) if (p[name]) out[name] = p[name]!.slice(0, 200);
  return out;
}

async function resetPage(
  c: Context<Env>,
  app: AppContext,
  p: Params,
  found: { user: UserRow } | null,
  extra: { mode?: "form" | "done"; message?: PageText; status?: number } = {},
): Promise<Response> {
  const csrf = await csrfToken(c, app);
  if (!found) return page(c, app, { step: "password_reset", mode: "invalid", rules: [], hidden: {} }, 400, {});
  const { user } = found;
  return page(
    c,
    app,
    {
      step: "password_reset",
      mode: extra.mode ?? "form",
      userName: user.username ?? "",
      rules: extra.mode === "done" ? [] : await passwordRules(app, user.tenantUuid),
      hidden: hidden(p, ["token", "user_uuid"], csrf),
      message: extra.message,
    },
    extra.status ?? 200,
    { tenantUuid: user.tenantUuid, userLocale: user.locale },
  );
}

async function showReset(c: Context<Env>, app: AppContext): Promise<Response> {
  const p = stringParams(queryObject(c));
  return resetPage(c, app, p, await resetUser(app, p));
}

async function submitReset(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const p = stringParams(body);
  if (!(await csrfMatches(c, app, p.csrf_token))) return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const found = await resetUser(app, p);
  if (!found) return resetPage(c, app, p, null);
  if (!p.new_password || p.new_password !== p.confirm_password)
    return resetPage(c, app, p, found, { message: "password.differ", status: 400 });
  if (p.new_password.length > 1024) return resetPage(c, app, p, found, { message: "password.differ", status: 400 });
  try {
    await resetPassword(app, found.caller, found.user.uuid, p.new_password);
  } catch (e) {
    const refused = passwordRefusalText(e);
    if (!refused) throw e;
    return resetPage(c, app, p, found, { message: refused, status: 400 });
  }
  return resetPage(c, app, p, found, { mode: "done" });
}

/** The stock reset mail's link, `/0.1/pages/password-reset`: on to the provider's page (its cookies' path). */
function toResetPage(c: Context<Env>, app: AppContext): Response {
  const p = stringParams(queryObject(c));
  const target = new URL(`${requestIssuer(c, app)}/${RESET}`);
  for (const name of ["token", "user_uuid", "ui_locales"])
    if (p[name]) target.searchParams.set(name, p[name]!.slice(0, 200));
  return redirectTo(c, target.toString());
}

async function confirmation(app: AppContext, p: Params) {
  if (!p.email_uuid || !isUuid(p.email_uuid)) return null;
  const caller = await mailedCaller(app, p.token, confirmAccess(p.email_uuid));
  if (!caller) return null;
  const [row] = await app.db
    .select({ address: emails.address, confirmed: emails.confirmed, user: users })
    .from(emails)
    .innerJoin(users, eq(users.uuid, emails.userUuid))
    .where(eq(emails.uuid, p.email_uuid));
  return row ? { caller, ...row } : null;
}

async function confirmPage(
  c: Context<Env>,
  app: AppContext,
  p: Params,
  found: Awaited<ReturnType<typeof confirmation>>,
  mode: "form" | "done" = "form",
): Promise<Response> {
  if (!found || (found.confirmed && mode === "form"))
    return page(c, app, { step: "email_confirm", mode: "invalid", hidden: {} }, 400, {});
  return page(
    c,
    app,
    {
      step: "email_confirm",
      mode,
      address: found.address,
      hidden: hidden(p, ["email_uuid", "token"], await csrfToken(c, app)),
    },
    200,
    { tenantUuid: found.user.tenantUuid, userLocale: found.user.locale },
  );
}

async function showConfirm(c: Context<Env>, app: AppContext): Promise<Response> {
  const p = stringParams(queryObject(c));
  return confirmPage(c, app, p, await confirmation(app, p));
}

async function submitConfirm(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const p = stringParams(body);
  if (!(await csrfMatches(c, app, p.csrf_token))) return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  const found = await confirmation(app, p);
  if (!found || found.confirmed) return confirmPage(c, app, p, null);
  try {
    await confirmEmail(app, found.caller, p.email_uuid!);
  } catch (e) {
    if (e instanceof ApiError && e.status < 500) return confirmPage(c, app, p, null);
    throw e;
  }
  return confirmPage(c, app, p, found, "done");
}

async function registerPage(
  c: Context<Env>,
  app: AppContext,
  p: Params,
  extra: { mode?: "form" | "done"; message?: PageText; status?: number } = {},
): Promise<Response> {
  if (!app.config.enabled_http_plugins.user_registration)
    return page(c, app, { step: "register", mode: "disabled", rules: [], hidden: {} }, 404);
  return page(
    c,
    app,
    {
      step: "register",
      mode: extra.mode ?? "form",
      rules: await passwordRules(app, app.topTenantUuid),
      hidden: hidden(p, [], await csrfToken(c, app)),
      message: extra.message,
      username: p.username?.slice(0, 256),
      address: p.email_address?.slice(0, 320),
    },
    extra.status ?? 200,
  );
}

async function submitRegister(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const p = stringParams(body);
  if (!(await csrfMatches(c, app, p.csrf_token))) return page(c, app, { step: "error", message: CSRF_REFUSED }, 400);
  if (!app.config.enabled_http_plugins.user_registration) return registerPage(c, app, p);
  if (!p.new_password || p.new_password !== p.confirm_password)
    return registerPage(c, app, p, { message: "password.differ", status: 400 });
  const username = (p.username ?? "").trim();
  const address = (p.email_address ?? "").trim();
  if (!username || username.length > 256 || !/^[^\s@]+@[^\s@]+$/.test(address) || address.length > 320)
    return registerPage(c, app, p, { message: "register.taken", status: 400 });
  try {
    await registerUser(
      app,
      { username, password: p.new_password, email_address: address },
      requestConnection(c, "users"),
    );
  } catch (e) {
    const refused = passwordRefusalText(e);
    if (refused) return registerPage(c, app, p, { message: refused, status: 400 });
    if (e instanceof ApiError && e.status < 500)
      return registerPage(c, app, p, { message: "register.taken", status: 400 });
    throw e;
  }
  return registerPage(c, app, p, { mode: "done" });
}

const formBody = z.record(z.string(), z.unknown());
const html = (description: string) => ({ description, contentType: "text/html" });

export function selfServiceRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page")
    .get(
      `/pages/${RESET}`,
      {
        summary: "The stock password-reset mail's link: on to the provider's new-password page, same query",
        operationId: "getPasswordResetLink",
        responses: { 303: "To {issuer}/password-reset" },
      },
      ({ c, app }) => Promise.resolve(toResetPage(c, app)),
    )
    .get(
      `/oidc/${RESET}`,
      {
        summary: "Choose a new password from a mailed reset link (`token`, `user_uuid`), with the rules that apply",
        operationId: "getPasswordResetPage",
        responses: {
          200: html("The form, with the password rules"),
          400: html("The link is not valid any more"),
          503: html("Database outage"),
        },
      },
      ({ c, app }) => outagePage(app, () => showReset(c, app), c),
    )
    .post(
      `/oidc/${RESET}`,
      {
        summary: "The new-password form: sets the password with the mailed token (single use; every session ends)",
        operationId: "submitPasswordResetPage",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("Done"),
          400: html("The form again (passwords differ, a rule refused it), the link expired, or CSRF refused"),
          503: html("Database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitReset(c, app, body), c, body),
    )
    .get(
      `/oidc/${REGISTER}`,
      {
        summary: "Create an account (self-registration, when `enabled_http_plugins.user_registration` allows it)",
        operationId: "getRegistrationPage",
        responses: { 200: html("The form, with the password rules"), 404: html("Registration is not open") },
      },
      ({ c, app }) => outagePage(app, () => registerPage(c, app, stringParams(queryObject(c))), c),
    )
    .post(
      `/oidc/${REGISTER}`,
      {
        summary: "The registration form: a new tenant and user as POST /0.1/users/register, then the confirmation mail",
        operationId: "submitRegistrationPage",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("Done: the confirmation mail is sent"),
          400: html("The form again (a rule refused the password, the name or address is taken), or CSRF refused"),
          404: html("Registration is not open"),
          503: html("The mail could not be sent, or the database is unavailable (nothing was created)"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitRegister(c, app, body), c, body),
    )
    .get(
      `/oidc/${CONFIRM}`,
      {
        summary: "Confirm an email address from the mailed link (`email_uuid`, `token`): the address and a button",
        operationId: "getEmailConfirmationPage",
        responses: {
          200: html("The address and the Confirm button"),
          400: html("The link is not valid any more"),
          503: html("Database outage"),
        },
      },
      ({ c, app }) => outagePage(app, () => showConfirm(c, app), c),
    )
    .post(
      `/oidc/${CONFIRM}`,
      {
        summary: "The confirmation form: confirms the address with the mailed token (single use)",
        operationId: "submitEmailConfirmationPage",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("Confirmed"),
          400: html("The link is not valid any more, or CSRF refused"),
          503: html("Database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => submitConfirm(c, app, body), c, body),
    );
}
