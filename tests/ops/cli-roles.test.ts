// `tessera tenants add-admin`: the customer's administrator in one command, on the real process — a
// user of the tenant holding the stock tenant-administrator (or auditor) policy; refused by the
// grant rule for a caller who could not grant it, leaving no user behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTesseraClient, type TesseraClient } from "../../clients/typescript/index.ts";
import { CliService, cliKinds } from "../helpers/cli-service.ts";

for (const kind of cliKinds()) {
  describe(`tessera tenants add-admin [${kind}]`, () => {
    const svc = new CliService(kind, "cli-roles");
    const { url, admin, tessera } = svc;
    let client: TesseraClient;
    let customer = "";

    const login = async (username: string, password: string) =>
      (await createTesseraClient({ baseUrl: url }).login({ username, password })) as { token: string; acl: string[] };

    beforeAll(async () => {
      client = await svc.start();
      customer = (await client.ops.createTenant({ body: { name: "customer" } })).uuid;
    }, 120_000);

    afterAll(() => svc.stop());

    test("the administrator: a user of the tenant with tessera_tenant_admin, acting there only", async () => {
      const r = await tessera(["tenants", "add-admin", customer, "--username", "boss", "--json"], {
        ...admin,
        TESSERA_NEW_PASSWORD: "s3cret-boss",
      });
      expect(r.code).toBe(0);
      expect(JSON.parse(r.out)).toMatchObject({
        username: "boss",
        tenant_uuid: customer,
        policy: "tessera_tenant_admin",
      });
      const boss = await login("boss", "s3cret-boss");
      expect(boss.acl).toContain("auth.#");
      const asBoss = createTesseraClient({ baseUrl: url });
      asBoss.token = boss.token;
      const made = await asBoss.ops.createUser({ body: { username: "staff" } });
      expect(made.tenant_uuid).toBe(customer);
    }, 60_000);

    test("the auditor reads; an unknown role and a missing password are usage errors", async () => {
      const r = await tessera(["tenants", "add-admin", customer, "--username", "eyes", "--role", "auditor"], {
        ...admin,
        TESSERA_NEW_PASSWORD: "s3cret-eyes",
      });
      expect(r.code).toBe(0);
      expect((await login("eyes", "s3cret-eyes")).acl).toContain("auth.#.read");
      const bad = await tessera(["tenants", "add-admin", customer, "--username", "x", "--role", "root"], admin);
      expect([bad.code, bad.err]).toEqual([2, expect.stringContaining("--role is admin or auditor")]);
      expect((await tessera(["tenants", "add-admin", customer, "--username", "x"], admin)).code).toBe(2);
    }, 60_000);

    test("a caller who could not grant auth.# is refused, and the user it created is gone", async () => {
      const inCustomer = client.withTenant(customer);
      const policy = await inCustomer.ops.createPolicy({ body: { name: "user-keeper", acl: ["auth.users.#"] } });
      const keeper = await inCustomer.ops.createUser({ body: { username: "keeper", password: "s3cret-keeper" } });
      await inCustomer.ops.addUserPolicy({ params: { path: { user_uuid: keeper.uuid, policy: policy.uuid } } });
      const r = await tessera(["tenants", "add-admin", customer, "--username", "usurper"], {
        TESSERA_AUTH_USER: "keeper",
        TESSERA_AUTH_PASSWORD: "s3cret-keeper",
        TESSERA_NEW_PASSWORD: "s3cret-usurper",
      });
      expect([r.code, r.err]).toEqual([1, expect.stringContaining("403")]);
      const left = await inCustomer.ops.listUsers({ params: { query: { search: "usurper" } } });
      expect(left.items.map((u) => u.username)).not.toContain("usurper");
    }, 60_000);
  });
}
