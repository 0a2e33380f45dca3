// Policies attached to groups and users, and a user's groups (wazo-auth's user group and policy API, group API).
// Attaching a policy grants its whole ACL, so the grant rules of §4.5 apply to every entry.
import { and, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { groupPolicies, groups, policies, userPolicies } from "../../db/schema.ts";
import { recordAudit, type AuditEntry } from "../audit/record.ts";
import { inTransaction } from "../../db/tx.ts";
import { orAbsent } from "../../domain/errors.ts";
import type { Caller } from "../../domain/caller.ts";
import type { Collection, ListParams } from "../../domain/collection.ts";
import { publishEvent, routingKey } from "../events.ts";
import { groupEvent, listGroupsWhere, requireVisibleGroup, type GroupFilter, type GroupJson } from "./groups.ts";
import { listPoliciesWhere, requireGrant, type PolicyFilter } from "./policies.ts";
import {
  aclOf,
  findVisiblePolicy,
  policyScope,
  visibleCondition,
  type PolicyJson,
  type PolicyRow,
} from "./policy-visibility.ts";
import { requireVisibleUser } from "./visibility.ts";

async function grantablePolicy(
  app: AppContext,
  caller: Caller,
  idOrSlug: string,
  tx: DbOrTx,
  adding: boolean,
): Promise<PolicyRow> {
  const { row } = await findVisiblePolicy(app, caller, idOrSlug, tx);
  const acl = (await aclOf(tx, [row.uuid])).get(row.uuid) ?? [];
  if (adding) requireGrant(caller, acl);
  else requireGrant(caller, [], acl);
  return row;
}

export async function listGroupPolicies(
  app: AppContext,
  caller: Caller,
  groupUuid: string,
  params: ListParams<PolicyFilter>,
): Promise<Collection<PolicyJson>> {
  const g = await requireVisibleGroup(app, caller, groupUuid);
  const scope = await policyScope(app, caller, true);
  const base = and(
    sql`${policies.uuid} in (select gp.policy_uuid from auth_group_policy gp where gp.group_uuid = ${g.uuid})`,
    visibleCondition(scope),
  )!;
  return listPoliciesWhere(app, scope, base, params);
}

/** Detaching what is absent or unseen is the desired state already (D4 of docs/wazo-auth-differences.md). */
const lookup = <T>(attach: boolean, p: Promise<T>): Promise<T | null> => (attach ? p : orAbsent(p));

/** Allowed on the system-managed all-users group too (§11.1). */
/** `group.policy.attach`, `user.policy.detach`…: the policy as the changed field. */
function linkAudit(
  attach: boolean,
  kind: "group" | "user",
  target: { uuid: string; tenantUuid: string },
  policyUuid: string,
): AuditEntry {
  return {
    action: `${kind}.policy.${attach ? "attach" : "detach"}`,
    target: { kind, uuid: target.uuid, tenantUuid: target.tenantUuid },
    changes: [{ field: "policy_uuid", old: attach ? null : policyUuid, new: attach ? policyUuid : null }],
  };
}

export async function setGroupPolicy(
  app: AppContext,
  caller: Caller,
  groupUuid: string,
  idOrSlug: string,
  attach: boolean,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const g = await lookup(attach, requireVisibleGroup(app, caller, groupUuid, tx));
    const p = g && (await lookup(attach, grantablePolicy(app, caller, idOrSlug, tx, attach)));
    if (!g || !p) return;
    const changed = attach
      ? await tx
          .insert(groupPolicies)
          .values({ groupUuid: g.uuid, policyUuid: p.uuid })
          .onConflictDoNothing()
          .returning()
      : await tx
          .delete(groupPolicies)
          .where(and(eq(groupPolicies.groupUuid, g.uuid), eq(groupPolicies.policyUuid, p.uuid)))
          .returning();
    if (changed.length) {
      await recordAudit(app, tx, caller, linkAudit(attach, "group", g, p.uuid));
      const kind = attach ? "created" : "deleted";
      await groupEvent(
        app,
        tx,
        `auth_group_policy_${attach ? "added" : "removed"}`,
        routingKey(`auth.groups.{group_uuid}.policies.{policy_uuid}.${kind}`, {
          group_uuid: g.uuid,
          policy_uuid: p.uuid,
        }),
        g,
        { policy_uuid: p.uuid },
      );
    }
  });
}

export async function listUserPolicies(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  params: ListParams<PolicyFilter>,
): Promise<Collection<PolicyJson>> {
  const user = await requireVisibleUser(app, caller, userUuid);
  const scope = await policyScope(app, caller, true);
  return listPoliciesWhere(
    app,
    scope,
    sql`${policies.uuid} in (select up.policy_uuid from auth_user_policy up where up.user_uuid = ${user.uuid})`,
    params,
  );
}

export async function setUserPolicy(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  idOrSlug: string,
  attach: boolean,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const user = await lookup(attach, requireVisibleUser(app, caller, userUuid, tx));
    const p = user && (await lookup(attach, grantablePolicy(app, caller, idOrSlug, tx, attach)));
    if (!user || !p) return;
    const changed = attach
      ? await tx
          .insert(userPolicies)
          .values({ userUuid: user.uuid, policyUuid: p.uuid })
          .onConflictDoNothing()
          .returning()
      : await tx
          .delete(userPolicies)
          .where(and(eq(userPolicies.userUuid, user.uuid), eq(userPolicies.policyUuid, p.uuid)))
          .returning();
    if (changed.length) {
      await recordAudit(app, tx, caller, linkAudit(attach, "user", user, p.uuid));
      await publishEvent(app, tx, {
        name: `auth_user_policy_${attach ? "added" : "removed"}`,
        routingKey: routingKey(`auth.users.{user_uuid}.policies.{policy_uuid}.${attach ? "created" : "deleted"}`, {
          user_uuid: user.uuid,
          policy_uuid: p.uuid,
        }),
        data: { user_uuid: user.uuid, policy_uuid: p.uuid, tenant_uuid: user.tenantUuid },
        tenantUuid: user.tenantUuid,
        userUuid: user.uuid,
        aggregate: `user:${user.uuid}`,
      });
    }
  });
}

export async function listUserGroups(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  params: ListParams<GroupFilter>,
): Promise<Collection<GroupJson>> {
  const user = await requireVisibleUser(app, caller, userUuid);
  return listGroupsWhere(
    app,
    sql`${groups.uuid} in (select ug.group_uuid from auth_user_group ug where ug.user_uuid = ${user.uuid})`,
    params,
  );
}
