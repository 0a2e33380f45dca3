// A tenant's password policy (NIST SP 800-63B §3.1.1.2's minimum length, per tenant): a tenant may set
// its own minimum, which its sub-tenants inherit. The effective minimum of a tenant is the largest of
// the service-wide `password_policy.min_length` and every minimum set on the tenant or an ancestor, so
// what is set above a tenant is a floor its administrators can only raise.
// Thinking as a hostile sub-tenant administrator: a minimum below the one in force above the tenant is
// refused, and a minimum set on the tenant by an ancestor's administrator (recorded as `set_by`) can be
// lowered only by administrators of that ancestor or above (their own tenant at or above it).
import { eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { tenantPasswordPolicy } from "../../db/schema.ts";
import type { Caller } from "../../domain/caller.ts";
import { Forbidden, InvalidData } from "../../domain/errors.ts";
import { isSubtenant, tenantExists } from "./tenant-tree.ts";

/** Bounds of a tenant's minimum: NIST's 8 at least (the service-wide value may be lower, for tests). */
export const TENANT_MIN_LENGTH = { min: 8, max: 64 } as const;

export interface PasswordPolicyInput {
  min_length: number | null;
}

export interface PasswordPolicyJson {
  /** The tenant's own minimum; null: inherited. */
  min_length: number | null;
  effective_min_length: number;
  /** The ancestor whose minimum is in force; null: the tenant's own, or the service-wide value. */
  inherited_from: string | null;
}

/** A minimum set on the tenant or an ancestor, root first. */
interface Setting {
  tenant_uuid: string;
  min_length: number;
  set_by: string | null;
}

/** The settings along `tenant`'s materialised path (itself included), root first. */
const chainQuery = (tenant: unknown) =>
  sql`select pp.tenant_uuid, pp.min_length, pp.set_by_tenant_uuid as set_by
        from tessera.tenant_path p
        cross join lateral string_to_table(btrim(p.path, '/'), '/') with ordinality as a(uuid, depth)
        join tessera_tenant_password_policy pp on pp.tenant_uuid = a.uuid
        where p.tenant_uuid = ${tenant} order by a.depth`;

/** The same settings as JSON text, a column of the tenant list's own query. */
export const passwordPolicyField = sql<string>`(select coalesce(json_agg(json_build_object('tenant_uuid', s.tenant_uuid,
  'min_length', s.min_length, 'set_by', s.set_by)), '[]')::text from (${chainQuery(sql`"auth_tenant"."uuid"`)}) s)`;

async function settingsOf(db: DbOrTx, tenantUuid: string): Promise<Setting[]> {
  return execRows<Setting>(db, chainQuery(tenantUuid));
}

/** The policy as GET /tenants shows it, from the settings along the tenant's path. */
export function passwordPolicyJson(serviceMin: number, tenantUuid: string, chain: Setting[]): PasswordPolicyJson {
  const own = chain.find((s) => s.tenant_uuid === tenantUuid)?.min_length ?? null;
  const effective = Math.max(serviceMin, ...chain.map((s) => s.min_length));
  const source = own === effective ? null : chain.findLast((s) => s.min_length === effective);
  return { min_length: own, effective_min_length: effective, inherited_from: source?.tenant_uuid ?? null };
}

export async function tenantPasswordPolicyJson(
  app: AppContext,
  db: DbOrTx,
  tenantUuid: string,
): Promise<PasswordPolicyJson> {
  return passwordPolicyJson(app.config.password_policy.min_length, tenantUuid, await settingsOf(db, tenantUuid));
}

/** The shortest password a user of `tenantUuid` may set. */
export async function effectiveMinLength(app: AppContext, db: DbOrTx, tenantUuid: string): Promise<number> {
  return (await tenantPasswordPolicyJson(app, db, tenantUuid)).effective_min_length;
}

function refused(min: number, why: string): InvalidData {
  return new InvalidData("tenants", {
    password_policy: {
      min_length: {
        constraint_id: "range",
        constraint: { min, max: TENANT_MIN_LENGTH.max },
        message: `Must be at least ${min}: ${why}.`,
      },
    },
  });
}

/** True when the caller's own tenant is `setBy` or one of its ancestors (null `setBy`: the master tenant). */
async function outranks(app: AppContext, db: DbOrTx, caller: Caller, setBy: string | null): Promise<boolean> {
  const own = caller.ownTenantUuid;
  return own !== null && (await isSubtenant(db, setBy ?? app.topTenantUuid, own, app.topTenantUuid));
}

/**
 * Sets the tenant's own minimum (null: inherit again), in the caller's transaction, the caller
 * already allowed to update the tenant. Refused (400 on `password_policy.min_length`): a minimum below
 * the one in force above the tenant, and a lowering of a minimum set by an ancestor's administrator
 * by a caller who does not outrank them. `set_by` keeps the highest authority that set the value, so
 * a sub-tenant administrator who raises it cannot then lower it below what was imposed.
 */
export async function setTenantPasswordPolicy(
  app: AppContext,
  tx: DbOrTx,
  caller: Caller,
  tenantUuid: string,
  input: PasswordPolicyInput | null,
): Promise<void> {
  const wanted = input?.min_length ?? null;
  const chain = await settingsOf(tx, tenantUuid);
  const own = chain.find((s) => s.tenant_uuid === tenantUuid) ?? null;
  if (wanted === (own?.min_length ?? null)) return;
  const serviceMin = app.config.password_policy.min_length;
  const above = Math.max(serviceMin, ...chain.filter((s) => s !== own).map((s) => s.min_length));
  if (wanted !== null && wanted < above) throw refused(above, "the minimum in force above this tenant");
  const mayOverride = own !== null && (await outranks(app, tx, caller, own.set_by));
  if (own && Math.max(above, wanted ?? 0) < Math.max(above, own.min_length) && !mayOverride)
    throw refused(own.min_length, "set by an administrator of a parent tenant, only they can lower it");
  if (wanted === null) {
    await tx.delete(tenantPasswordPolicy).where(eq(tenantPasswordPolicy.tenantUuid, tenantUuid));
    return;
  }
  // A caller's own tenant that no longer exists (a token outliving it) records no authority.
  const ownTenant =
    caller.ownTenantUuid && (await tenantExists(tx, caller.ownTenantUuid)) ? caller.ownTenantUuid : null;
  const setBy = own && !mayOverride ? own.set_by : ownTenant;
  await tx
    .insert(tenantPasswordPolicy)
    .values({ tenantUuid, minLength: wanted, setByTenantUuid: setBy })
    .onConflictDoUpdate({
      target: tenantPasswordPolicy.tenantUuid,
      set: { minLength: wanted, setByTenantUuid: setBy, updatedAt: sql`now()` },
    });
}

/** The settings along the tenant's path before a move, for `refuseWeakeningMove`. */
export const settingsBeforeMove = settingsOf;

/**
 * After a move (in its transaction): 403 when the tenant's effective minimum fell below a minimum it
 * inherited that the caller could not have lowered itself — a sub-tenant's administrator cannot
 * escape a parent's minimum by moving the tenant elsewhere in its subtree.
 */
export async function refuseWeakeningMove(
  app: AppContext,
  tx: DbOrTx,
  caller: Caller,
  tenantUuid: string,
  before: Setting[],
): Promise<void> {
  const now = Math.max(
    app.config.password_policy.min_length,
    ...(await settingsOf(tx, tenantUuid)).map((s) => s.min_length),
  );
  for (const lost of before.filter((s) => s.min_length > now)) {
    if (await outranks(app, tx, caller, lost.set_by)) continue;
    throw new Forbidden(
      "tenants",
      `The move would lower the tenant's minimum password length below ${lost.min_length}, set above it by an administrator of a parent tenant`,
      { password_policy: { min_length: { inherited_from: lost.tenant_uuid, min: lost.min_length } } },
      "forbidden",
      tenantUuid,
    );
  }
}
