// Issue 22, item 5, as the attacker tries it: a look-alike of `admin` (full width, other case,
// compatibility forms) cannot be created beside it, and logs in as the one `admin`. Rows that
// collided before are reported (`tessera users collisions`), never changed, and do not stop the
// migration that adds the comparison's index.
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/db/index.ts";
import { tenants, users } from "../../src/db/schema.ts";
import { findLoginCollisions } from "../../src/services/identity/login-names.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { basicAuth } from "../helpers/service-process.ts";
import { tempDirs } from "../helpers/temp-dirs.ts";

const tempDir = tempDirs("tessera-collisions-");

const uniq = () => crypto.randomUUID().slice(0, 6);
/** `admin` → `ａｄｍｉｎ` (U+FF41…): the full-width forms of ASCII letters and digits. */
const fullWidth = (s: string) =>
  [...s].map((c) => (/[!-~]/.test(c) ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c)).join("");

describeEachDb("look-alike logins", (get) => {
  test("a full-width, re-cased or compatibility look-alike of a login cannot be created, renamed to or registered as an address", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const name = `admin${uniq()}`;
    expect(
      (
        await t.request("POST", "/0.1/users", {
          token: admin,
          body: { username: name, password: "right-pw", email_address: `${name}@example.org` },
        })
      ).status,
    ).toBe(200);
    const other = await createUserRow(t.app, { tenantUuid: tenant });
    const lookalikes = [
      fullWidth(name),
      fullWidth(name.toUpperCase()),
      name.toUpperCase(),
      `ａ${name.slice(1)}`,
      name.replace("i", "ｉ"),
      fullWidth(`${name}@example.org`),
    ];
    for (const username of lookalikes) {
      let r = await t.request("POST", "/0.1/users", { token: admin, body: { username, password: "attacker-pw" } });
      expect([username, r.status, r.json.error_id, Object.keys(r.json.details)]).toEqual([
        username,
        409,
        "conflict",
        ["username"],
      ]);
      r = await t.request("PUT", `/0.1/users/${other}`, { token: admin, body: { username } });
      expect([username, r.status]).toEqual([username, 409]);
    }
    // compatibility forms: the ligature ﬁ (U+FB01) is `fi`
    const fi = `fi${uniq()}`;
    expect((await t.request("POST", "/0.1/users", { token: admin, body: { username: fi } })).status).toBe(200);
    expect(
      (await t.request("POST", "/0.1/users", { token: admin, body: { username: `ﬁ${fi.slice(2)}` } })).status,
    ).toBe(409);
    // an address that looks like someone's username
    const r = await t.request("PUT", `/0.1/admin/users/${other}/emails`, {
      token: admin,
      body: { emails: [{ address: `${fi}@x.org`, main: true, confirmed: true }] },
    });
    expect(r.status).toBe(204);
    expect(
      (await t.request("POST", "/0.1/users", { token: admin, body: { username: fullWidth(`${fi}@x.org`) } })).status,
    ).toBe(409);
  });

  test("the look-alike logs in as the one user it names, with that user's password only", async () => {
    const t = get();
    const name = `boss${uniq()}`;
    const uuid = await createUserRow(t.app, { username: name, password: "right-pw" });
    for (const login of [fullWidth(name), fullWidth(name).toUpperCase(), name.toUpperCase()]) {
      const r = await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(login, "right-pw") });
      expect([login, r.status, r.json?.data?.auth_id]).toEqual([login, 200, uuid]);
      expect(
        (await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(login, "attacker-pw") })).status,
      ).toBe(401);
    }
  });

  test("rows that already collide: the migration still applies, the exact spelling logs in, the collision is reported", async () => {
    const t = get();
    const name = `legacy${uniq()}`;
    const original = await createUserRow(t.app, { username: name, password: "first-pw" });
    // as an older database may hold them: written before the comparison, straight into the table
    await t.app.db.execute(sql.raw("drop index auth_user_username_key_idx"));
    const [twin] = await t.app.db
      .insert(users)
      .values({ username: fullWidth(name), tenantUuid: t.app.topTenantUuid, passwordHash: null })
      .returning();
    const migration = readFileSync(new URL("../../drizzle/0010_username_key.sql", import.meta.url), "utf8");
    await t.app.db.execute(sql.raw(migration));
    const r = await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(name, "first-pw") });
    expect([r.status, r.json.data.auth_id]).toEqual([200, original]);
    const found = (await findLoginCollisions(t.app.db)).find((c) => c.key === name);
    expect(found?.logins.map((l) => [l.user_uuid, l.login, l.kind]).sort()).toEqual(
      [
        [original, name, "username"],
        [twin!.uuid, fullWidth(name), "username"],
      ].sort(),
    );
    // nothing was changed
    expect((await t.app.db.select().from(users).where(sql`uuid = ${twin!.uuid}`))[0]!.username).toBe(fullWidth(name));
  });
});

test("`tessera users collisions` reports colliding rows of the local database (exit 1), and none (exit 0)", async () => {
  const dir = tempDir();
  const env = {
    ...process.env,
    TESSERA_CONFIG: join(dir, "config.yml"),
    TESSERA_DATA_DIR: join(dir, "data"),
    TESSERA_LOG_LEVEL: "warning",
  };
  writeFileSync(join(dir, "config.yml"), "password_hash_iterations: 1000\n");
  const tessera = async (args: string[]) => {
    const p = Bun.spawn(["node", "bin/tessera.js", ...args], {
      cwd: join(import.meta.dir, "../.."),
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
    return { code: await p.exited, out, err };
  };
  expect((await tessera(["bootstrap", "admin", "s3cret-admin"])).code).toBe(0);
  let r = await tessera(["users", "collisions"]);
  expect([r.code, r.out.trim()]).toEqual([0, "no colliding logins"]);
  const db = await openDatabase({ dataDir: join(dir, "data") });
  const [top] = await db.db.select({ uuid: tenants.uuid }).from(tenants).limit(1);
  await db.db.insert(users).values({ username: "ＡＤＭＩＮ", tenantUuid: top!.uuid });
  await db.close();
  r = await tessera(["users", "collisions", "--json"]);
  expect(r.code).toBe(1);
  const { collisions } = JSON.parse(r.out);
  expect(
    collisions.map((c: { key: string; logins: Array<{ login: string }> }) => [c.key, c.logins.map((l) => l.login)]),
  ).toEqual([["admin", ["admin", "ＡＤＭＩＮ"]]]);
  r = await tessera(["users", "collisions"]);
  expect(r.code).toBe(1);
  expect(r.out).toContain("ＡＤＭＩＮ");
  expect(r.err).toContain("1 colliding login");
}, 60_000);
