// Password reset (wazo-auth's password-reset API).
import { z } from "zod";
import { ApiError, invalidField } from "../domain/errors.ts";
import { requestOrigin } from "../http/request-origin.ts";
import { type Env, RouteGroup } from "../http/route.ts";
import { CAPS, emailText, text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import { requestPasswordReset, resetPassword, type ResetQuery } from "../services/auth/password-reset.ts";
import { requestConnection } from "../http/public-urls.ts";
import { authenticate, requestToken, resolveCaller } from "../http/auth.ts";
import type { AppContext } from "../boot/context.ts";
import type { Context } from "hono";
import type { Caller } from "../domain/caller.ts";

/**
 * The caller behind the request's token, when it carries a valid one: this route needs none (a user
 * who forgot the password has none), and an invalid one is ignored as if absent.
 */
async function optionalCaller(c: Context<Env>, app: AppContext): Promise<Caller | null> {
  const token = requestToken(c);
  if (!token) return null;
  try {
    return await resolveCaller(app, await authenticate(app, token, null), c.req.header("Wazo-Tenant"));
  } catch (e) {
    if (e instanceof ApiError && e.status < 500) return null;
    throw e;
  }
}

const askQuery = z.object({
  username: text(CAPS.username, { min: 1 }).optional(),
  email: emailText().optional(),
  login: text(CAPS.username, { min: 1 }).optional(),
});

export function passwordResetRoutes(): RouteGroup {
  return new RouteGroup("reset")
    .get(
      "/users/password/reset",
      {
        operationId: "requestPasswordReset",
        summary:
          "Ask for a reset link by username, email or login — always 204, at once (an administrator's: once sent)",
        query: askQuery,
        responses: {
          204: "Accepted (whether or not the user exists)",
          400: "Not exactly one of username, email, login",
          429: "Too many requests for this login or from this address (`Retry-After`)",
          503: "The request cannot be checked now, or `public_url` is not configured (for every login alike); for an administrator's request (a token that sees the user and holds `auth.users.password.reset.{user_uuid}.create`), also the mail could not be sent, naming why",
        },
      },
      async ({ c, app, query }) => {
        const given = (["username", "email", "login"] as const).filter((k) => query[k] !== undefined);
        if (given.length !== 1)
          throw invalidField("reset", "_schema", "predicate", null, '"username" or "email" or "login" should be used');
        const key = given[0]!;
        await requestPasswordReset(
          app,
          { [key]: query[key] } as ResetQuery,
          requestConnection(c, "reset"),
          requestOrigin(c, app.config.rest_api.trusted_proxies),
          await optionalCaller(c, app),
        );
        return c.body(null, 204);
      },
    )
    .post(
      "/users/password/reset",
      {
        operationId: "resetPassword",
        summary: "Set a new password with the emailed token (`?token=` or header); null removes it",
        acl: "auth.users.password.reset.{user_uuid}.create",
        tokenFromQuery: true,
        query: z.object({ user_uuid: uuidParam, token: text(CAPS.queryValue).optional() }),
        body: z.object({
          password: text(CAPS.password, { min: 1 }).nullable(),
          // Tessera addition (docs/security.md): the user must choose a new password at the next login.
          must_change: z.boolean().optional(),
        }),
        responses: {
          204: "Done; the user's sessions ended",
          400: "Invalid body",
          401: "Invalid token",
          403: "Token not for this user, or the caller's own user (change it with `PUT /users/{user_uuid}/password` and the old password)",
          404: "No such user",
          405: "Password managed by an identity provider",
        },
      },
      async ({ c, app, caller, query, body }) => {
        await resetPassword(app, caller, query.user_uuid, body.password, body.must_change);
        return c.body(null, 204);
      },
    );
}
