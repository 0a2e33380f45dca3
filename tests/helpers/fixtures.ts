// Rows and tokens made directly through the services, for tests that need a caller before the
// routes that would create one are under test.
import { randomUUID } from "node:crypto";
import type { AppContext } from "../../src/boot/context.ts";
import { tenants, users, groups } from "../../src/db/schema.ts";
import { insertToken } from "../../src/services/auth/tokens.ts";
import { hashPassword } from "../../src/services/auth/passwords.ts";
import type { TestApp } from "./app.ts";

export async function createTenantRow(
  app: AppContext,
  opts: { parentUuid?: string; name?: string } = {},
): Promise<string> {
  const uuid = randomUUID();
  await app.db.insert(tenants).values({
    uuid,
    name: opts.name ?? `t-${uuid.slice(0, 6)}`,
    slug: uuid.replaceAll("-", "").slice(0, 10),
    parentUuid: opts.parentUuid ?? app.topTenantUuid,
  });
  await app.db.insert(groups).values({
    name: `wazo-all-users-tenant-${uuid}`,
    slug: `wazo-all-users-tenant-${uuid}`,
    tenantUuid: uuid,
    systemManaged: true,
  });
  app.tenantTree.invalidate(); // as the tenant service does after its commit
  return uuid;
}

export async function createUserRow(
  app: AppContext,
  opts: { tenantUuid?: string; username?: string; password?: string; purpose?: string; enabled?: boolean } = {},
): Promise<string> {
  const uuid = randomUUID();
  const pw = opts.password ? await hashPassword(opts.password, app.config) : null;
  await app.db.insert(users).values({
    uuid,
    username: opts.username ?? `user-${uuid.slice(0, 8)}`,
    tenantUuid: opts.tenantUuid ?? app.topTenantUuid,
    purpose: opts.purpose ?? "user",
    enabled: opts.enabled ?? true,
    passwordHash: pw?.hash ?? null,
    passwordSalt: pw?.salt ?? null,
    passwordIterations: pw?.iterations ?? null,
  });
  return uuid;
}

/** A token for a (new) user of `tenantUuid` holding exactly `acl`. */
export async function tokenFor(
  app: AppContext,
  opts: { acl: string[]; tenantUuid?: string; userUuid?: string; expiration?: number },
): Promise<{ token: string; userUuid: string; sessionUuid: string; tenantUuid: string }> {
  const tenantUuid = opts.tenantUuid ?? app.topTenantUuid;
  const userUuid = opts.userUuid ?? (await createUserRow(app, { tenantUuid }));
  const issued = await insertToken(app, app.db, {
    authId: userUuid,
    pbxUserUuid: userUuid,
    acl: opts.acl,
    metadata: {
      uuid: userUuid,
      tenant_uuid: tenantUuid,
      auth_id: userUuid,
      pbx_user_uuid: userUuid,
      xivo_uuid: app.xivoUuid,
      purpose: "user",
    },
    expiration: opts.expiration ?? 3600,
    userAgent: "tests",
    remoteAddr: "127.0.0.1",
    sessionTenantUuid: tenantUuid,
    mobile: false,
  });
  return { token: issued.record.uuid, userUuid, sessionUuid: issued.record.sessionUuid, tenantUuid };
}

/** A master-tenant administrator token (ACL `#`). */
export async function adminToken(app: AppContext): Promise<string> {
  return (await tokenFor(app, { acl: ["#"] })).token;
}

/**
 * A tenant with a child and a sibling, and an administrator token in each: the cast of every
 * tenant-isolation test.
 */
export async function tenantFamily(app: AppContext, acl: string[] = ["auth.#"]) {
  const tenant = await createTenantRow(app);
  const child = await createTenantRow(app, { parentUuid: tenant });
  const sibling = await createTenantRow(app);
  return {
    tenant,
    child,
    sibling,
    admin: (await tokenFor(app, { acl, tenantUuid: tenant })).token,
    childAdmin: (await tokenFor(app, { acl, tenantUuid: child })).token,
    siblingAdmin: (await tokenFor(app, { acl, tenantUuid: sibling })).token,
  };
}

/**
 * A user of `tenant` (password `<username>-secret`, the one `consoleAs` signs in with) holding a
 * policy of `acl`, made through the API by the master administrator, so the user's tokens carry
 * the ACL as any administrator's would. Its uuid.
 */
export async function policyHolder(
  t: Pick<TestApp, "app" | "request">,
  tenant: string,
  username: string,
  acl: string[],
): Promise<string> {
  const root = await adminToken(t.app);
  const user = await createUserRow(t.app, { tenantUuid: tenant, username, password: `${username}-secret` });
  const policy = await t.request("POST", "/0.1/policies", {
    token: root,
    tenant,
    body: { name: `${username}-admin`, acl },
  });
  if (policy.status !== 200) throw new Error(`policy of ${username}: ${policy.status} ${policy.text}`);
  const attach = await t.request("PUT", `/0.1/users/${user}/policies/${policy.json.uuid}`, { token: root, tenant });
  if (attach.status !== 204) throw new Error(`policy of ${username} attached: ${attach.status} ${attach.text}`);
  return user;
}
