// Passkeys (issue 25): a user's WebAuthn credentials, through `me` (registration is the user's own
// ceremony: only `me` registers) or by uuid (administrators of the user's tenant list, rename and
// remove; a user renames its own by its uuid: `auth.users.me.mfa.#` covers its own uuid). ACLs as the TOTP routes': `auth.users.{user_uuid}.mfa.{read,create,update,delete}`.
// A removal by the user itself needs a proof whichever form names it (services/auth/factor-removal.ts).
import type { Context } from "hono";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { orAbsent } from "../domain/errors.ts";
import { text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import { RouteGroup, type Env } from "../http/route.ts";
import { mfaSubject } from "../services/auth/mfa.ts";
import {
  finishPasskeyRegistration,
  listPasskeys,
  passkeyJson,
  renamePasskey,
  startPasskeyAuthentication,
  startPasskeyRegistration,
} from "../services/auth/webauthn.ts";
import { removePasskeyFactors } from "../services/auth/factor-removal.ts";
import { requestOrigin } from "../http/request-origin.ts";
import { requestRp } from "../http/public-urls.ts";

const userParam = z.object({ user_uuid: uuidParam });
const passkeyParam = z.object({ user_uuid: uuidParam, passkey_uuid: uuidParam });
const ownPasskeyParam = z.object({ passkey_uuid: uuidParam });
const nameBody = z.object({ name: text(64, { min: 1 }) });
const registerBody = z.object({
  challenge_id: text(64, { min: 1 }),
  name: text(64, { min: 1 }),
  /** The browser's `RegistrationResponseJSON` (WebAuthn §5.1 `PublicKeyCredential.toJSON()`). */
  credential: z.record(z.string(), z.unknown()),
});

/** The proof a user removing its own passkeys gives (services/auth/factor-removal.ts): a code, or a passkey assertion. */
const proofBody = z.object({
  code: text(64, { min: 1 }).optional(),
  challenge_id: text(64, { min: 1 }).optional(),
  /** The browser's `AuthenticationResponseJSON`. */
  credential: z.record(z.string(), z.unknown()).optional(),
});

const listAnswer =
  "`{items: [{uuid, name, created_at, last_used_at, backup_eligible, backed_up, transports, aaguid}], total}`";
const passkeyAnswer = "`{uuid, name, created_at, last_used_at, backup_eligible, backed_up, transports, aaguid}`";

/** A removal's proof with what checking it needs: the relying party and the request's origin (throttling). */
const proofOf = (c: Context<Env>, app: AppContext, given: z.infer<typeof proofBody>) => ({
  rp: requestRp(c, app),
  origin: requestOrigin(c, app.config.rest_api.trusted_proxies),
  given,
});

const selfProofResponses = (removed: string) => ({
  204: removed,
  400: "Invalid body; or the user itself without a proof, with a wrong code, or an assertion not verified",
  429: "Too many wrong codes",
});

const listed = async (app: AppContext, user: Parameters<typeof listPasskeys>[1]) => {
  const items = (await listPasskeys(app, user)).map(passkeyJson);
  return { items, total: items.length };
};

export function passkeyRoutes(): RouteGroup {
  return new RouteGroup("mfa")
    .get(
      "/users/me/mfa/passkeys",
      {
        summary: "The caller's passkeys",
        acl: "auth.users.me.mfa.read",
        responses: { 200: listAnswer, 404: "The token has no user" },
      },
      async ({ c, app, caller }) => c.json(await listed(app, await mfaSubject(app, caller, "me"))),
    )
    .post(
      "/users/me/mfa/passkeys/registration",
      {
        summary:
          "Start registering a passkey: WebAuthn creation options and the id of their challenge (single use, five minutes)",
        acl: "auth.users.me.mfa.create",
        responses: {
          201: "`{challenge_id, options}`: pass `options` to navigator.credentials.create()",
          404: "The token has no user",
        },
      },
      async ({ c, app, caller }) =>
        c.json(await startPasskeyRegistration(app, await mfaSubject(app, caller, "me"), requestRp(c, app)), 201),
    )
    .post(
      "/users/me/mfa/passkeys",
      {
        summary: "Finish registering a passkey with the authenticator's response",
        acl: "auth.users.me.mfa.create",
        body: registerBody,
        responses: {
          201: passkeyAnswer,
          400: "Invalid body, unknown/expired/used challenge, response not verified, or passkey already registered",
          404: "The token has no user",
        },
      },
      async ({ c, app, caller, body }) => {
        const user = await mfaSubject(app, caller, "me");
        return c.json(passkeyJson(await finishPasskeyRegistration(app, user, requestRp(c, app), body, caller)), 201);
      },
    )
    .delete(
      "/users/me/mfa/passkeys/{passkey_uuid}",
      {
        operationId: "deleteMyPasskey",
        summary:
          "Remove one of the caller's passkeys, proven with a current TOTP or recovery code (`code`) or a fresh assertion of one of its passkeys (`challenge_id`, `credential`); throttled like logins",
        acl: "auth.users.me.mfa.delete",
        params: ownPasskeyParam,
        body: proofBody,
        responses: {
          204: "Removed, or absent",
          400: "Invalid body, no proof, wrong code, or assertion not verified",
          404: "The token has no user",
          429: "Too many wrong codes",
        },
      },
      async ({ c, app, caller, params, body }) => {
        const user = await mfaSubject(app, caller, "me");
        await removePasskeyFactors(app, caller, user, params.passkey_uuid, proofOf(c, app, body));
        return c.body(null, 204);
      },
    )
    .post(
      "/users/me/mfa/passkeys/assertion",
      {
        operationId: "startMyPasskeyAssertion",
        summary:
          "WebAuthn request options for one of the caller's passkeys (single use, five minutes): the proof a passkey removal may carry",
        acl: "auth.users.me.mfa.delete",
        responses: {
          201: "`{challenge_id, options}`: pass `options` to navigator.credentials.get()",
          404: "The token has no user",
        },
      },
      async ({ c, app, caller }) => {
        const user = await mfaSubject(app, caller, "me");
        return c.json(await startPasskeyAuthentication(app, requestRp(c, app), user.uuid), 201);
      },
    )
    .get(
      "/users/{user_uuid}/mfa/passkeys",
      {
        summary: "A user's passkeys",
        acl: "auth.users.{user_uuid}.mfa.read",
        params: userParam,
        responses: { 200: listAnswer, 404: "No such user" },
      },
      async ({ c, app, caller, params }) => c.json(await listed(app, await mfaSubject(app, caller, params.user_uuid))),
    )
    .put(
      "/users/{user_uuid}/mfa/passkeys/{passkey_uuid}",
      {
        operationId: "renameUserPasskey",
        summary: "Rename one of a user's passkeys",
        acl: "auth.users.{user_uuid}.mfa.update",
        params: passkeyParam,
        body: nameBody,
        responses: { 204: "Renamed", 400: "Invalid body", 404: "No such user or passkey" },
      },
      async ({ c, app, caller, params, body }) => {
        await renamePasskey(
          app,
          await mfaSubject(app, caller, params.user_uuid),
          params.passkey_uuid,
          body.name,
          caller,
        );
        return c.body(null, 204);
      },
    )
    .delete(
      "/users/{user_uuid}/mfa/passkeys/{passkey_uuid}",
      {
        operationId: "deleteUserPasskey",
        summary:
          "Remove one of a user's passkeys: an administrator, for another user; the user itself (its own uuid) gives a proof, as through `me`",
        acl: "auth.users.{user_uuid}.mfa.delete",
        params: passkeyParam,
        body: proofBody,
        bodyOptional: true,
        responses: selfProofResponses("Removed, or absent (no such user or passkey, or not visible: D4)"),
      },
      async ({ c, app, caller, params, body }) => {
        const user = await orAbsent(mfaSubject(app, caller, params.user_uuid));
        if (user) await removePasskeyFactors(app, caller, user, params.passkey_uuid, proofOf(c, app, body));
        return c.body(null, 204);
      },
    )
    .delete(
      "/users/{user_uuid}/mfa/passkeys",
      {
        operationId: "deleteUserPasskeys",
        summary:
          "Remove every passkey of a user: an administrator's reset of another user; the user itself (its own uuid) gives a proof, as through `me`",
        acl: "auth.users.{user_uuid}.mfa.delete",
        params: userParam,
        body: proofBody,
        bodyOptional: true,
        responses: selfProofResponses("Removed, or absent (D4)"),
      },
      async ({ c, app, caller, params, body }) => {
        const user = await orAbsent(mfaSubject(app, caller, params.user_uuid));
        if (user) await removePasskeyFactors(app, caller, user, null, proofOf(c, app, body));
        return c.body(null, 204);
      },
    );
}
