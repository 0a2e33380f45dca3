// A user's links to upstream OpenID identities (docs/federation.md "Accounts"): listed and removed by the
// user (`me`) and by the administrators of the user's tenant (services/identity/visibility.ts). Removing a
// link ends nothing already issued; the next sign-in through that provider is refused (or, with
// `provisioning: create`, is refused too: the username is taken).
import { and, asc, eq } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import type { DbOrTx } from "../../../db/index.ts";
import { passkeys, upstreamOidcLinks, upstreamOidcProviders, users } from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import type { Caller } from "../../../domain/caller.ts";
import { Conflict, NotFound, orAbsent } from "../../../domain/errors.ts";
import { type AuditActor, recordAudit } from "../../audit/record.ts";
import { effectiveMethod } from "../../auth/identity-providers.ts";
import { publishEvent, routingKey } from "../../events.ts";
import { requireVisibleUser, type UserRow } from "../../identity/visibility.ts";

export interface LinkJson {
  oidc_backend_uuid: string;
  name: string;
  display_name: string;
  subject: string;
  created_at: string;
}

const resolve = (caller: Caller, userUuid: string) => {
  if (userUuid !== "me") return userUuid;
  if (!caller.userUuid) throw new NotFound("users", "me");
  return caller.userUuid;
};

export async function listUserLinks(
  app: AppContext,
  caller: Caller,
  userUuid: string,
): Promise<{ items: LinkJson[]; total: number }> {
  const user = await requireVisibleUser(app, caller, resolve(caller, userUuid));
  const rows = await app.db
    .select({ link: upstreamOidcLinks, name: upstreamOidcProviders.name, display: upstreamOidcProviders.displayName })
    .from(upstreamOidcLinks)
    .innerJoin(upstreamOidcProviders, eq(upstreamOidcProviders.uuid, upstreamOidcLinks.providerUuid))
    .where(eq(upstreamOidcLinks.userUuid, user.uuid))
    .orderBy(asc(upstreamOidcProviders.name), asc(upstreamOidcLinks.subject));
  const items = rows.map((r) => ({
    oidc_backend_uuid: r.link.providerUuid,
    name: r.name,
    display_name: r.display,
    subject: r.link.subject,
    created_at: r.link.createdAt.toISOString(),
  }));
  return { items, total: items.length };
}

/**
 * Absent, or a user the caller cannot see: nothing to delete (D4 of docs/wazo-auth-differences.md). A
 * user removing its own link (`me`, or its own uuid) is held to the last-way-in rule (`unlinkOwn`): a
 * 409 rather than an account nobody can sign in to. An administrator removing another user's link is
 * not: it can give that user a password (or a new link) itself.
 */
export async function deleteUserLink(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  providerUuid: string,
): Promise<void> {
  const user = await orAbsent(requireVisibleUser(app, caller, resolve(caller, userUuid)));
  if (!user) return;
  if (user.uuid === caller.userUuid) {
    await unlinkOwn(app, user, providerUuid, caller);
    return;
  }
  await inTransaction(app, (tx) => removeLink(app, tx, user, providerUuid, caller));
}

/** Deletes the link (evented, audited); false when there was none. */
async function removeLink(
  app: AppContext,
  tx: DbOrTx,
  user: Pick<UserRow, "uuid" | "tenantUuid">,
  providerUuid: string,
  actor: Caller | AuditActor,
): Promise<boolean> {
  const gone = await tx
    .delete(upstreamOidcLinks)
    .where(and(eq(upstreamOidcLinks.userUuid, user.uuid), eq(upstreamOidcLinks.providerUuid, providerUuid)))
    .returning();
  if (gone.length === 0) return false;
  await publishEvent(app, tx, {
    name: "auth_user_oidc_link_deleted",
    routingKey: routingKey("auth.users.{user_uuid}.oidc_links.{uuid}.deleted", {
      user_uuid: user.uuid,
      uuid: providerUuid,
    }),
    data: { user_uuid: user.uuid, tenant_uuid: user.tenantUuid, oidc_backend_uuid: providerUuid },
    tenantUuid: user.tenantUuid,
    userUuid: user.uuid,
    aggregate: `user:${user.uuid}`,
  });
  await recordAudit(app, tx, actor, {
    action: "user.oidc_link.delete",
    target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
    changes: gone.map((l) => ({ field: "oidc_link", old: `${providerUuid}:${l.subject}`, new: null })),
  });
  return true;
}

/** The user's own links, for the account page: the provider's display name and when it was linked. */
export async function ownLinks(
  app: AppContext,
  userUuid: string,
): Promise<Array<{ providerUuid: string; displayName: string; createdAt: Date }>> {
  return app.db
    .select({
      providerUuid: upstreamOidcLinks.providerUuid,
      displayName: upstreamOidcProviders.displayName,
      createdAt: upstreamOidcLinks.createdAt,
    })
    .from(upstreamOidcLinks)
    .innerJoin(upstreamOidcProviders, eq(upstreamOidcProviders.uuid, upstreamOidcLinks.providerUuid))
    .where(eq(upstreamOidcLinks.userUuid, userUuid))
    .orderBy(asc(upstreamOidcProviders.displayName), asc(upstreamOidcLinks.createdAt));
}

/** Why a user may not remove its own link: it is the only way left to sign in (409, clear JSON on the API). */
export class LastSignInLink extends Conflict {
  constructor(readonly displayName: string) {
    super(
      "oidc_links",
      {
        oidc_backend_uuid: {
          constraint_id: "last_sign_in",
          constraint: "another way to sign in",
          message: `${displayName} is the only way this user can sign in: set a password or add a passkey first.`,
        },
      },
      `${displayName} is the only way this user can sign in`,
    );
  }
}

/**
 * Whether the user, with its links `remaining` after a removal, still has a way in: another link; a
 * passkey (passwordless sign-in takes any user whose passkey it is); or a password its effective
 * authentication method accepts — `native` with a password (`oidc` refuses a password at sign-in; LDAP
 * and SAML users sign in elsewhere, so they keep a way in).
 */
export async function hasAnotherWayIn(
  tx: DbOrTx,
  user: Pick<UserRow, "uuid" | "tenantUuid" | "authenticationMethod" | "passwordHash">,
  remaining: number,
): Promise<boolean> {
  if (remaining > 0) return true;
  const [passkey] = await tx
    .select({ uuid: passkeys.uuid })
    .from(passkeys)
    .where(eq(passkeys.userUuid, user.uuid))
    .limit(1);
  if (passkey) return true;
  const method = await effectiveMethod(tx, user.authenticationMethod, user.tenantUuid);
  if (method === "oidc") return false;
  return !(method === "native" && user.passwordHash === null);
}

/**
 * A user removing its own link (the account page, and `DELETE /users/me/oidc_links/{uuid}`): refused
 * with LastSignInLink when the user would be left with no way in (`hasAnotherWayIn`). Returns the
 * provider's display name, or null when there was no such link.
 */
export async function unlinkOwn(
  app: AppContext,
  user: Pick<UserRow, "uuid">,
  providerUuid: string,
  actor: Caller | AuditActor,
): Promise<string | null> {
  return inTransaction(app, async (tx) => {
    // Locked: two unlinks at once must not both see "another link remains".
    const [me] = await tx.select().from(users).where(eq(users.uuid, user.uuid)).for("update");
    if (!me) return null;
    const links = await tx
      .select({ providerUuid: upstreamOidcLinks.providerUuid, displayName: upstreamOidcProviders.displayName })
      .from(upstreamOidcLinks)
      .innerJoin(upstreamOidcProviders, eq(upstreamOidcProviders.uuid, upstreamOidcLinks.providerUuid))
      .where(eq(upstreamOidcLinks.userUuid, user.uuid));
    const link = links.find((l) => l.providerUuid === providerUuid);
    if (!link) return null;
    if (!(await hasAnotherWayIn(tx, me, links.length - 1))) throw new LastSignInLink(link.displayName);
    await removeLink(app, tx, me, providerUuid, actor);
    return link.displayName;
  });
}
