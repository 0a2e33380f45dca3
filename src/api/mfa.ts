// Multi-factor authentication (issue 25): a user's TOTP factor, through `me` (the stock user
// policy grants `auth.users.me.mfa.#`) or by uuid (administrators of the user's tenant), and the
// per-tenant MFA policy. The `me` routes come first: `me` is not a uuid. A removal by the user
// itself needs a code whichever form names it (services/auth/factor-removal.ts).
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { requestOrigin } from "../http/request-origin.ts";
import { text } from "../domain/strings.ts";
import { orAbsent } from "../domain/errors.ts";
import { uuidParam } from "../domain/validate.ts";
import { confirmTotp, mfaStatus, mfaSubject, startTotpEnrolment } from "../services/auth/mfa.ts";
import { removeTotpFactor } from "../services/auth/factor-removal.ts";
import { getTenantMfaPolicy, setTenantMfaPolicy } from "../services/auth/mfa-policy.ts";

const userParam = z.object({ user_uuid: uuidParam });
const tenantParam = z.object({ tenant_uuid: uuidParam });
const codeBody = z.object({ code: text(64, { min: 1 }) });
const policyBody = z.object({
  /** Null inherits; absent leaves it as it is. */
  mfa: z.enum(["optional", "required"]).nullable().optional(),
  /** Passwordless passkey sign-in on the hosted login page; null inherits; absent leaves it as it is. */
  passwordless: z.boolean().nullable().optional(),
});

const statusAnswer =
  "`{totp: {enrolled, confirmed, created_at, confirmed_at}, recovery_codes_left, methods}` (never the secret)";
const enrolAnswer =
  "`{secret, otpauth_uri, qr_code}`: the base32 secret, its otpauth:// URI and an SVG QR code data URI, shown this once";
const confirmAnswer = "`{recovery_codes}`: ten single-use codes, shown this once";
const mfaDown =
  "MFA not configured (`mfa-not-configured`: no `mfa.encryption_keys` on PostgreSQL) or the database is unavailable";

export function mfaRoutes(): RouteGroup {
  return new RouteGroup("mfa")
    .get(
      "/users/me/mfa",
      {
        summary: "The caller's second factors",
        acl: "auth.users.me.mfa.read",
        responses: { 200: statusAnswer, 404: "The token has no user" },
      },
      async ({ c, app, caller }) => c.json(await mfaStatus(app, await mfaSubject(app, caller, "me"))),
    )
    .post(
      "/users/me/mfa/totp",
      {
        summary: "Start the caller's TOTP enrolment",
        acl: "auth.users.me.mfa.create",
        responses: {
          201: enrolAnswer,
          404: "The token has no user",
          409: "A TOTP factor is already confirmed",
          503: mfaDown,
        },
      },
      async ({ c, app, caller }) => c.json(await startTotpEnrolment(app, await mfaSubject(app, caller, "me")), 201),
    )
    .post(
      "/users/me/mfa/totp/confirm",
      {
        operationId: "confirmMyMfaTotp",
        summary: "Confirm the caller's TOTP enrolment with a current code",
        acl: "auth.users.me.mfa.update",
        body: codeBody,
        responses: {
          200: confirmAnswer,
          400: "Invalid body, or wrong code",
          404: "No enrolment in progress",
          409: "Already confirmed",
          503: mfaDown,
        },
      },
      async ({ c, app, caller, body }) =>
        c.json(await confirmTotp(app, await mfaSubject(app, caller, "me"), body.code, caller)),
    )
    .delete(
      "/users/me/mfa/totp",
      {
        summary:
          "Remove the caller's TOTP factor and recovery codes, proven with a current code or a recovery code (throttled like logins); nothing confirmed: 204 without a code",
        acl: "auth.users.me.mfa.delete",
        body: codeBody.partial(),
        responses: {
          204: "Removed",
          400: "Invalid body, or wrong code",
          404: "The token has no user",
          429: "Too many wrong codes",
          503: mfaDown,
        },
      },
      async ({ c, app, caller, body }) => {
        const user = await mfaSubject(app, caller, "me");
        await removeTotpFactor(app, caller, user, body.code, requestOrigin(c, app.config.rest_api.trusted_proxies));
        return c.body(null, 204);
      },
    )
    .get(
      "/users/{user_uuid}/mfa",
      {
        summary: "A user's second factors",
        acl: "auth.users.{user_uuid}.mfa.read",
        params: userParam,
        responses: { 200: statusAnswer, 404: "No such user" },
      },
      async ({ c, app, caller, params }) =>
        c.json(await mfaStatus(app, await mfaSubject(app, caller, params.user_uuid))),
    )
    .post(
      "/users/{user_uuid}/mfa/totp",
      {
        summary: "Start a user's TOTP enrolment",
        acl: "auth.users.{user_uuid}.mfa.create",
        params: userParam,
        responses: { 201: enrolAnswer, 404: "No such user", 409: "A TOTP factor is already confirmed", 503: mfaDown },
      },
      async ({ c, app, caller, params }) =>
        c.json(await startTotpEnrolment(app, await mfaSubject(app, caller, params.user_uuid)), 201),
    )
    .post(
      "/users/{user_uuid}/mfa/totp/confirm",
      {
        operationId: "confirmUserMfaTotp",
        summary: "Confirm a user's TOTP enrolment with a current code",
        acl: "auth.users.{user_uuid}.mfa.update",
        params: userParam,
        body: codeBody,
        responses: {
          200: confirmAnswer,
          400: "Invalid body, or wrong code",
          404: "No such user, or no enrolment in progress",
          409: "Already confirmed",
          503: mfaDown,
        },
      },
      async ({ c, app, caller, params, body }) =>
        c.json(await confirmTotp(app, await mfaSubject(app, caller, params.user_uuid), body.code, caller)),
    )
    .delete(
      "/users/{user_uuid}/mfa/totp",
      {
        summary:
          "Remove a user's TOTP factor and recovery codes: an administrator's reset of another user; the user itself (its own uuid) proves it with a current or recovery code, as through `me`",
        acl: "auth.users.{user_uuid}.mfa.delete",
        params: userParam,
        body: codeBody.partial(),
        bodyOptional: true,
        responses: {
          204: "Removed, or absent (no such user, or not visible: D4)",
          400: "Invalid body; or the user itself without a right code",
          429: "Too many wrong codes",
        },
      },
      async ({ c, app, caller, params, body }) => {
        const user = await orAbsent(mfaSubject(app, caller, params.user_uuid));
        // absent or unseen: the desired state (D4 of docs/wazo-auth-differences.md)
        if (user)
          await removeTotpFactor(app, caller, user, body.code, requestOrigin(c, app.config.rest_api.trusted_proxies));
        return c.body(null, 204);
      },
    )
    .get(
      "/tenants/{tenant_uuid}/mfa",
      {
        summary:
          "A tenant's MFA policy: its own setting and the effective one (inherited from the nearest ancestor that sets one)",
        acl: "auth.tenants.{tenant_uuid}.mfa.read",
        params: tenantParam,
        responses: {
          200: "`{mfa, effective, inherited_from, passwordless, passwordless_effective, passwordless_inherited_from}`",
          404: "No such tenant",
        },
      },
      async ({ c, app, caller, params }) => c.json(await getTenantMfaPolicy(app, caller, params.tenant_uuid)),
    )
    .put(
      "/tenants/{tenant_uuid}/mfa",
      {
        summary:
          "Set a tenant's MFA policy (`optional`, `required`, or null to inherit) and whether passkeys may sign in without a password (`passwordless`: true, false, null to inherit, absent to keep); relaxing a parent's requirement is for that parent's administrators",
        acl: "auth.tenants.{tenant_uuid}.mfa.update",
        params: tenantParam,
        body: policyBody,
        responses: {
          204: "Set (a setting absent from the body is left as it is)",
          400: "Invalid body",
          403: "A parent tenant requires MFA",
          404: "No such tenant",
        },
      },
      async ({ c, app, caller, params, body }) => {
        await setTenantMfaPolicy(app, caller, params.tenant_uuid, body.mfa, body.passwordless);
        return c.body(null, 204);
      },
    );
}
