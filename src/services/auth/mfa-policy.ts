// The per-tenant MFA policy (issue 25): `optional` (the default) or `required`, set on a tenant
// and inherited by its sub-tenants unless one of them sets its own. A user of a tenant requiring
// MFA who has no factor logs in to an enrol-only token. Relaxing a requirement set by an ancestor
// is for a caller whose own tenant is that ancestor or above: a sub-tenant's admin cannot — nor
// can it exempt users one by one by giving them an exempt purpose (`internal`).
import { and, eq, isNull, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { mfaTotp, passkeys, tenantMfaPolicy, users } from "../../db/schema.ts";
import { execRows, type DbOrTx } from "../../db/index.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { changesOf, recordAudit } from "../audit/record.ts";
import { Forbidden, NotFound } from "../../domain/errors.ts";
import { tenantVisible } from "../identity/visibility.ts";
import { isSubtenant } from "../identity/tenant-tree.ts";
import { recordMfa } from "../../observe/metrics.ts";

export type MfaPolicy = "optional" | "required";

/** What a user may do through `me` on its own factors (`mfa.self_service`). */
export const MFA_SELF_SERVICE_ACL = "auth.users.me.mfa.#";
/** The whole ACL of a token issued to a user who must enrol before anything else. */
export const MFA_ENROL_ONLY_ACL = [MFA_SELF_SERVICE_ACL];

/**
 * A login token's ACL with the self-service entry (`mfa.self_service`): every user of purpose `user`
 * manages its own factors out of the box, in every tenant, without a policy to attach — and without
 * changing any policy, group or list a wazo-auth client reads. A removal still asks for a proof
 * (factor-removal.ts); internal and external-API users are the administrators' to manage.
 */
export function withSelfService(app: AppContext, purpose: unknown, acl: string[]): string[] {
  if (!app.config.mfa.self_service || purpose !== "user" || acl.includes(MFA_SELF_SERVICE_ACL)) return acl;
  return [...acl, MFA_SELF_SERVICE_ACL];
}

/**
 * Columns of the login's one user read (user-auth.ts): whether the user has a confirmed factor, and
 * whether any tenant has an MFA policy at all (two index probes). Only when one has, a user without
 * a factor costs the login one more statement (`tenantRequiresMfa`): a deployment that never sets a
 * policy runs the login it ran before. (Walking the tenant tree inside the read doubled its time on
 * PGlite: a recursive query planned twice, once per UNION branch, at every login.)
 */
export const loginMfaColumns = {
  mfaEnabled:
    sql<boolean>`(exists (select 1 from ${mfaTotp} where ${mfaTotp.userUuid} = ${users.uuid} and ${mfaTotp.confirmedAt} is not null)
      or exists (select 1 from ${passkeys} where ${passkeys.userUuid} = ${users.uuid}))`.as("mfa_enabled"),
  mfaPoliciesSet: sql<boolean>`exists (select 1 from ${tenantMfaPolicy} where ${tenantMfaPolicy.mfa} = 'required')`.as(
    "mfa_policies_set",
  ),
};

/** What the requirement rule reads of a user: the login read's columns (user-auth.ts). */
export interface MfaSubject {
  tenantUuid: string;
  purpose: string;
  mfaEnabled: boolean;
  mfaPoliciesSet: boolean;
}

/**
 * The one rule of the requirement, for every way a user gets a token — a password login, a refresh
 * (POST /0.1/token's refresh token, the OIDC refresh grant) and single sign-on with a browser
 * session, the last two possibly made before the tenant required MFA: a user without a confirmed
 * factor, in a tenant requiring MFA, gets the enrol-only ACL; null means no restriction. Exempt
 * purposes (internal users) are exempt. One statement, and only when some tenant requires MFA and
 * the user has no factor.
 */
export async function mfaRestrictedAcl(app: AppContext, user: MfaSubject | null): Promise<string[] | null> {
  if (!user || user.mfaEnabled || !user.mfaPoliciesSet || exemptFromMfa(user.purpose)) return null;
  if (!(await tenantRequiresMfa(app, user.tenantUuid))) return null;
  recordMfa("restricted");
  return MFA_ENROL_ONLY_ACL;
}

/** Purposes a tenant's MFA requirement does not apply to: the platform's own services. */
const MFA_EXEMPT_PURPOSES: ReadonlySet<string> = new Set(["internal"]);
export const exemptFromMfa = (purpose: string): boolean => MFA_EXEMPT_PURPOSES.has(purpose);

/**
 * Relaxing a requirement is for a caller whose own tenant is where it is set, or above: a
 * sub-tenant's administrator cannot undo what a parent decided for it.
 */
async function mayRelax(
  app: AppContext,
  caller: Caller,
  policy: { mfa: MfaPolicy; from: string | null },
  db: DbOrTx = app.db,
) {
  if (policy.mfa !== "required" || !policy.from) return true;
  const own = caller.ownTenantUuid;
  return Boolean(own && (await isSubtenant(db, policy.from, own, app.topTenantUuid)));
}

/**
 * 403 when giving a user of `tenantUuid` the purpose `purpose` (a creation, or a change from
 * `previous`) would exempt it from a requirement the caller may not relax: an exempt purpose is a
 * relaxation for that user, so it takes the same right as relaxing the tenant's policy.
 */
export async function requireMayExempt(
  app: AppContext,
  caller: Caller,
  tenantUuid: string,
  purpose: string,
  previous: string | null,
  db: DbOrTx = app.db,
): Promise<void> {
  if (!exemptFromMfa(purpose) || (previous !== null && exemptFromMfa(previous))) return;
  const policy = await effectivePolicy(app, tenantUuid, false, db);
  if (await mayRelax(app, caller, policy, db)) return;
  throw new Forbidden(
    "users",
    `A parent tenant requires MFA; only its administrators can give a user the purpose "${purpose}", which is exempt`,
    { inherited_from: policy.from },
    "forbidden",
  );
}

export async function tenantRequiresMfa(app: AppContext, tenantUuid: string): Promise<boolean> {
  return (await effectivePolicy(app, tenantUuid)).mfa === "required";
}

/** Passwordless passkey sign-in on the hosted login page: off unless the tenant or an ancestor turns it on. */
export async function tenantAllowsPasswordless(app: AppContext, tenantUuid: string): Promise<boolean> {
  return (await effectiveSetting(app, tenantUuid, "passwordless")).value === true;
}

type Setting = "mfa" | "passwordless";

/** One setting's effective value and where it comes from (the tenant itself, the nearest ancestor setting it, or none). */
async function effectiveSetting(
  app: AppContext,
  tenantUuid: string,
  setting: Setting,
  skipSelf = false,
  db: DbOrTx = app.db,
): Promise<{ value: string | boolean | null; from: string | null }> {
  const rows = await execRows<{ value: string | boolean; uuid: string }>(
    db,
    sql`with recursive up(uuid, parent_uuid, depth) as (
          select t.uuid, t.parent_uuid, 0 from auth_tenant t where t.uuid = ${tenantUuid}
          union all
          select p.uuid, p.parent_uuid, up.depth + 1 from auth_tenant p join up on p.uuid = up.parent_uuid where up.uuid <> up.parent_uuid
        ) select s.${sql.raw(setting)} as value, up.uuid from up join tessera_tenant_mfa_policy s on s.tenant_uuid = up.uuid
          where up.depth >= ${skipSelf ? 1 : 0} and s.${sql.raw(setting)} is not null order by up.depth limit 1`,
  );
  return rows[0] ? { value: rows[0].value, from: rows[0].uuid } : { value: null, from: null };
}

/** The tenant's effective MFA policy and where it comes from (the tenant itself, an ancestor, or the default). */
async function effectivePolicy(
  app: AppContext,
  tenantUuid: string,
  skipSelf = false,
  db: DbOrTx = app.db,
): Promise<{ mfa: MfaPolicy; from: string | null }> {
  const s = await effectiveSetting(app, tenantUuid, "mfa", skipSelf, db);
  return { mfa: (s.value as MfaPolicy | null) ?? "optional", from: s.from };
}

export interface TenantMfaJson {
  /** The tenant's own setting; null = inherited. */
  mfa: MfaPolicy | null;
  effective: MfaPolicy;
  inherited_from: string | null;
  /** The tenant's own passwordless setting; null = inherited (default: off). */
  passwordless: boolean | null;
  passwordless_effective: boolean;
  passwordless_inherited_from: string | null;
}

async function requireVisibleTenant(app: AppContext, caller: Caller, tenantUuid: string): Promise<void> {
  if (!(await tenantVisible(app, caller, tenantUuid))) throw new NotFound("tenants", tenantUuid);
}

export async function getTenantMfaPolicy(app: AppContext, caller: Caller, tenantUuid: string): Promise<TenantMfaJson> {
  await requireVisibleTenant(app, caller, tenantUuid);
  const [own] = await app.db
    .select({ mfa: tenantMfaPolicy.mfa, passwordless: tenantMfaPolicy.passwordless })
    .from(tenantMfaPolicy)
    .where(eq(tenantMfaPolicy.tenantUuid, tenantUuid));
  const eff = await effectivePolicy(app, tenantUuid);
  const pwl = await effectiveSetting(app, tenantUuid, "passwordless");
  return {
    mfa: (own?.mfa as MfaPolicy | null | undefined) ?? null,
    effective: eff.mfa,
    inherited_from: eff.from === tenantUuid ? null : eff.from,
    passwordless: own?.passwordless ?? null,
    passwordless_effective: pwl.value === true,
    passwordless_inherited_from: pwl.from === tenantUuid ? null : pwl.from,
  };
}

/** Sets the tenant's own policy (null: inherit again); a setting left undefined stays as it is. */
export async function setTenantMfaPolicy(
  app: AppContext,
  caller: Caller,
  tenantUuid: string,
  mfa: MfaPolicy | null | undefined,
  passwordless?: boolean | null,
): Promise<void> {
  await requireVisibleTenant(app, caller, tenantUuid);
  if (mfa !== undefined && mfa !== "required") {
    const above = await effectivePolicy(app, tenantUuid, true);
    if (!(await mayRelax(app, caller, above)))
      throw new Forbidden(
        "tenants",
        "A parent tenant requires MFA; only its administrators can relax it here",
        { inherited_from: above.from },
        "forbidden",
        tenantUuid,
      );
  }
  const set = {
    ...(mfa === undefined ? {} : { mfa }),
    ...(passwordless === undefined ? {} : { passwordless }),
  };
  if (Object.keys(set).length === 0) return;
  await inTransaction(app, async (tx) => {
    const [before] = await tx.select().from(tenantMfaPolicy).where(eq(tenantMfaPolicy.tenantUuid, tenantUuid));
    await recordAudit(app, tx, caller, {
      action: "tenant.mfa_policy.update",
      target: { kind: "tenant", uuid: tenantUuid, tenantUuid },
      changes: changesOf({ mfa: before?.mfa ?? null, passwordless: before?.passwordless ?? null }, set),
    });
    await tx
      .insert(tenantMfaPolicy)
      .values({ tenantUuid, ...set })
      .onConflictDoUpdate({ target: tenantMfaPolicy.tenantUuid, set: { ...set, updatedAt: sql`now()` } });
    // A row with nothing set is no row: the login's `mfa_policies_set` probe stays a cheap "none".
    await tx
      .delete(tenantMfaPolicy)
      .where(
        and(
          eq(tenantMfaPolicy.tenantUuid, tenantUuid),
          isNull(tenantMfaPolicy.mfa),
          isNull(tenantMfaPolicy.passwordless),
        ),
      );
  });
}
