// A user's links to upstream OpenID identities (docs/federation.md "Accounts"): listed and removed by the
// user (`me`) and by the administrators of the user's tenant (services/identity/visibility.ts). Removing a
// link ends nothing already issued; the next sign-in through that provider is refused (or, with
// `provisioning: create`, is refused too: the username is taken).
import { and, asc, eq } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import { upstreamOidcLinks, upstreamOidcProviders } from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import type { Caller } from "../../../domain/caller.ts";
import { NotFound, orAbsent } from "../../../domain/errors.ts";
import { recordAudit } from "../../audit/record.ts";
import { publishEvent, routingKey } from "../../events.ts";
import { requireVisibleUser } from "../../identity/visibility.ts";

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

/** Absent, or a user the caller cannot see: nothing to delete (D4 of docs/wazo-auth-differences.md). */
export async function deleteUserLink(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  providerUuid: string,
): Promise<void> {
  const user = await orAbsent(requireVisibleUser(app, caller, resolve(caller, userUuid)));
  if (!user) return;
  await inTransaction(app, async (tx) => {
    const gone = await tx
      .delete(upstreamOidcLinks)
      .where(and(eq(upstreamOidcLinks.userUuid, user.uuid), eq(upstreamOidcLinks.providerUuid, providerUuid)))
      .returning();
    if (gone.length === 0) return;
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
    await recordAudit(app, tx, caller, {
      action: "user.oidc_link.delete",
      target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
      changes: gone.map((l) => ({ field: "oidc_link", old: `${providerUuid}:${l.subject}`, new: null })),
    });
  });
}
