// `tessera tenants add-admin`: the customer's administrator in one command, on the real process — a
// user of the tenant holding the stock tenant-administrator (or auditor) policy; refused by the
// grant rule for a caller who could not grant it, leaving no user behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTesseraClient, type TesseraClient } from "../clients/typescript/index.ts";
import { scratchDatabase } from "./helpers/scratch-db.ts";
import { freePort, waitForService } from "./helpers/service-process.ts";

const root = join(import.meta.dir, "..");
const kinds = process.env.TEST_DATABASE_URL ? ["pglite", "postgres"] : ["pglite"];

for (const kind of kinds) {
  describe(`tessera tenants add-admin [${kind}]`, () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-cli-roles-"));
    const port = freePort();
    const url = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      TESSERA_CONFIG: join(dir, "config.yml"),
      TESSERA_DATA_DIR: join(dir, "data"),
      TESSERA_PORT: String(port),
      TESSERA_LOG_LEVEL: "warning",
      TESSERA_URL: url,
      NO_COLOR: "",
    };
    const admin = { TESSERA_AUTH_USER: "admin", TESSERA_AUTH_PASSWORD: "s3cret-admin" };
    let proc: ReturnType<typeof Bun.spawn>;
    let scratch: { url: string; drop(): Promise<void> } | undefined;
    let client: TesseraClient;
    let customer = "";

    async function tessera(args: string[], extraEnv: Record<string, string> = {}) {
      const p = Bun.spawn([process.execPath, "src/cli.ts", ...args], {
        cwd: root,
        env: { ...process.env, ...env, ...extraEnv },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
      return { code: await p.exited, out, err };
    }
    const login = async (username: string, password: string) =>
      (await createTesseraClient({ baseUrl: url }).login({ username, password })) as { token: string; acl: string[] };

    beforeAll(async () => {
      writeFileSync(join(dir, "config.yml"), "password_hash_iterations: 1000\n");
      if (kind === "postgres") {
        scratch = await scratchDatabase("tessera_cli_roles");
        env.DATABASE_URL = scratch.url;
      }
      expect((await tessera(["bootstrap", "admin", "s3cret-admin"])).code).toBe(0);
      proc = Bun.spawn([process.execPath, "src/main.ts"], {
        cwd: root,
        env: { ...process.env, ...env },
        stdout: "ignore",
        stderr: "ignore",
      });
      if (!(await waitForService(`${url}/0.1`, 60))) throw new Error("tessera did not start");
      client = createTesseraClient({ baseUrl: url });
      await client.login({ username: "admin", password: "s3cret-admin" });
      customer = (await client.ops.createTenant({ body: { name: "customer" } })).uuid;
    }, 120_000);

    afterAll(async () => {
      proc?.kill("SIGTERM");
      await proc?.exited;
      await scratch?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

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
