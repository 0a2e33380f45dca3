// The page shown on return from an upstream provider whose verified email is an existing account's
// (docs/federation.md "Accounts", issue 40 item 3): the account is linked only once its owner proved it
// here — its password, through the login itself (throttling, disabled users, the second factor), or a
// session of this browser (sign-in.ts). The sign-in under way waits, with the account it would link,
// until the completion secret of the browser that came back comes with that account's successful login.
import { createHash } from "node:crypto";
import { and, eq, gt, isNotNull, isNull } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import { upstreamOidcLogins, users } from "../../../db/schema.ts";
import { isSubtenant } from "../../identity/tenant-tree.ts";
import { loginNameOf } from "../../oidc/sign-in.ts";
import { findProvider, type ProviderRow } from "./providers.ts";
import { linkAccount } from "./sign-in.ts";

const sha256 = (s: string) => createHash("sha256").update(s).digest("base64url");

export interface PendingLink {
  /** Tessera's authorization request, resumed once the account is proven. */
  params: Record<string, string>;
  /** The account of the verified email, and the name its password is checked under. */
  userUuid: string;
  login: string;
  provider: ProviderRow;
}

const awaiting = (completion: string) =>
  and(
    eq(upstreamOidcLogins.completionHash, sha256(completion)),
    isNotNull(upstreamOidcLogins.linkUserUuid),
    isNull(upstreamOidcLogins.userUuid),
    gt(upstreamOidcLogins.expiresAt, new Date()),
  );

/** The sign-in of this completion secret awaiting its account's password; null when none (or expired). */
export async function pendingLink(app: AppContext, completion: string): Promise<PendingLink | null> {
  const [row] = await app.db.select().from(upstreamOidcLogins).where(awaiting(completion));
  if (!row?.linkUserUuid) return null;
  const provider = await findProvider(app, row.providerUuid);
  if (!provider || provider.provisioning === "off") return null;
  const login = await loginNameOf(app, row.linkUserUuid);
  return login ? { params: row.params, userUuid: row.linkUserUuid, login, provider } : null;
}

/**
 * The account proven (`provenUserUuid` just logged in, all its factors included): the link made, once.
 * False — nothing linked — when the sign-in is gone, expired, another account logged in, the provider
 * went or was turned off, the account left the provider's tenants, or the identity got linked meanwhile.
 */
export async function confirmLink(app: AppContext, completion: string, provenUserUuid: string): Promise<boolean> {
  const [row] = await app.db
    .delete(upstreamOidcLogins)
    .where(and(awaiting(completion), eq(upstreamOidcLogins.linkUserUuid, provenUserUuid)))
    .returning();
  if (!row?.subject) return false;
  const provider = await findProvider(app, row.providerUuid);
  if (!provider || provider.provisioning === "off") return false;
  const [owner] = await app.db
    .select({ uuid: users.uuid, tenantUuid: users.tenantUuid })
    .from(users)
    .where(eq(users.uuid, provenUserUuid));
  if (!owner || !(await isSubtenant(app.db, owner.tenantUuid, provider.tenantUuid, app.topTenantUuid))) return false;
  try {
    await linkAccount(app, provider, row.subject, owner);
  } catch (e) {
    // The (provider, sub) link is unique: another sign-in linked this identity first.
    // (PostgreSQL's unique_violation, on the error or, through drizzle, its cause.)
    const err = e as { code?: string; cause?: { code?: string } };
    if (err.code === "23505" || err.cause?.code === "23505") return false;
    throw e;
  }
  return true;
}

/** The sign-in awaiting a password, dropped (the browser gave up, or the provider refused meanwhile). */
export async function dropPendingLink(app: AppContext, completion: string): Promise<void> {
  await app.db.delete(upstreamOidcLogins).where(awaiting(completion));
}
