// Emails, confirmation, password reset and registration through a real SMTP server.
import { afterAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { emails, tenants, tokens, users } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { closedPort, startSmtp } from "../helpers/smtp-server.ts";

const smtp = await startSmtp();
afterAll(() => smtp.close());
const uniq = () => crypto.randomUUID().slice(0, 8);
const tokenIn = (text: string) => /token=([0-9a-f-]{36})/.exec(text)?.[1];

describeEachDb(
  "email addresses and confirmation",
  (get) => {
    test("PUT emails: main rules, conflicts, kept uuids; confirmation round trip; token single use", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const name = `eve${uniq()}`;
      const user = await createUserRow(t.app, { tenantUuid: tenant, username: name, password: "pw" });
      const put = (body: unknown, path = `/0.1/users/${user}/emails`) => t.request("PUT", path, { token: admin, body });
      let r = await put({ emails: [{ address: `${name}@a.org` }] });
      expect([r.status, r.json.details.emails.message]).toEqual([400, "At least one address should be main"]);
      r = await put({
        emails: [
          { address: `${name}@a.org`, main: true },
          { address: `${name}@b.org`, main: true },
        ],
      });
      expect(r.json.details.emails.message).toBe("Only one address should be main");
      r = await put({ emails: [{ address: `${name}@a.org`, main: true }, { address: `${name.toUpperCase()}@a.org` }] });
      expect(r.json.details.emails.message).toBe("The same address can only be used once");
      r = await put({ emails: [{ address: "not-an-address", main: true }] });
      expect([r.status, r.json.details.emails["0"].address.constraint_id]).toEqual([400, "email"]);
      const other = await createUserRow(t.app, { tenantUuid: tenant, username: `taken${name}@x.org` });
      r = await put({ emails: [{ address: `TAKEN${name}@x.org`, main: true }] });
      expect([r.status, Object.keys(r.json.details)]).toEqual([409, ["email_address"]]);
      expect(other).toBeTruthy();
      r = await put({ emails: [{ address: `${name}@a.org`, main: true }, { address: `${name}@b.org` }] });
      expect([r.status, r.text]).toEqual([204, ""]); // D3 of docs/wazo-auth-differences.md
      const addresses = async () => (await t.request("GET", `/0.1/users/${user}`, { token: admin })).json.emails;
      let listed = await addresses();
      expect(listed.map((e: { confirmed: boolean; main: boolean }) => [e.main, e.confirmed])).toEqual([
        [true, false],
        [false, false],
      ]);
      const mainUuid = listed.find((e: { main: boolean }) => e.main).uuid;
      r = await put(
        { emails: [{ address: `${name}@a.org`, main: true, confirmed: true }] },
        `/0.1/admin/users/${user}/emails`,
      );
      expect([r.status, r.text]).toEqual([204, ""]);
      listed = await addresses();
      expect(listed).toEqual([{ uuid: mainUuid, address: `${name}@a.org`, main: true, confirmed: true }]);
      await put(
        { emails: [{ address: `${name}@a.org`, main: true, confirmed: false }] },
        `/0.1/admin/users/${user}/emails`,
      );

      // confirmation: mail, link, confirm, token consumed
      r = await t.request("GET", `/0.1/users/${user}/emails/${mainUuid}/confirm`, { token: admin });
      expect(r.status).toBe(204);
      const mail = await smtp.waitForMail((m) => m.to.includes(`${name}@a.org`));
      expect(mail.text).toContain(`Subject: Email confirmation for ${name}`);
      expect(mail.text).toContain(`https://auth.example.com:8443/api/auth/0.1/emails/${mainUuid}/confirm?token=`);
      const token = tokenIn(mail.text)!;
      const confirm = await t.request("GET", `/0.1/emails/${mainUuid}/confirm?token=${token}`);
      expect([confirm.status, confirm.headers.get("Content-Type")]).toEqual([200, "text/html"]);
      expect(confirm.text).toContain("Email address confirmed");
      expect((await t.app.db.select().from(emails).where(eq(emails.uuid, mainUuid)))[0]!.confirmed).toBe(true);
      expect((await t.request("GET", `/0.1/emails/${mainUuid}/confirm?token=${token}`)).status).toBe(401);
      r = await t.request("GET", `/0.1/users/${user}/emails/${mainUuid}/confirm`, { token: admin });
      expect([r.status, r.json.error_id]).toEqual([409, "conflict"]);
      // now the confirmed email is a login
      expect(
        (
          await t.request("POST", "/0.1/token", {
            body: {},
            headers: { Authorization: `Basic ${btoa(`${name}@a.org:pw`)}` },
          })
        ).status,
      ).toBe(200);
    });

    test("isolation: another tenant's admin can neither change addresses nor request mails", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const user = await createUserRow(t.app, { tenantUuid: tenant });
      for (const outsider of [await createTenantRow(t.app), await createTenantRow(t.app, { parentUuid: tenant })]) {
        const token = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: outsider })).token;
        expect((await t.request("PUT", `/0.1/users/${user}/emails`, { token, body: { emails: [] } })).status).toBe(404);
        expect(
          (await t.request("PUT", `/0.1/admin/users/${user}/emails`, { token, body: { emails: [] } })).status,
        ).toBe(404);
        expect(
          (await t.request("GET", `/0.1/users/${user}/emails/${crypto.randomUUID()}/confirm`, { token })).status,
        ).toBe(404);
      }
    });
  },
  {
    config: { public_url: "https://auth.example.com:8443/api/auth", smtp: { hostname: "127.0.0.1", port: smtp.port } },
  },
);

describeEachDb(
  "password reset",
  (get) => {
    test("always 204; the mailed token sets a new password once and ends the sessions", async () => {
      const t = get();
      const name = `rita${uniq()}`;
      const uuid = await createUserRow(t.app, { username: name, password: "old" });
      await t.app.db.insert(emails).values({ address: `${name}@r.org`, main: true, confirmed: true, userUuid: uuid });
      const session = (
        await t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: `Basic ${btoa(`${name}:old`)}` } })
      ).json.data;
      let r = await t.request("GET", "/0.1/users/password/reset");
      expect([r.status, r.json.details._schema.constraint_id]).toEqual([400, "predicate"]);
      r = await t.request("GET", `/0.1/users/password/reset?username=a&email=b@c.org`);
      expect(r.status).toBe(400);
      // Best of 5 for each, so a GC pause or a busy CI core does not decide the comparison.
      const timed = async (q: () => string) => {
        let best = Number.POSITIVE_INFINITY;
        for (let i = 0; i < 5; i++) {
          await Bun.sleep(100); // the previous request's background work (lookup, mail) is not what is timed
          const s = performance.now();
          const res = await t.request("GET", `/0.1/users/password/reset?${q()}`);
          expect(res.status).toBe(204);
          best = Math.min(best, performance.now() - s);
        }
        return best;
      };
      // An oracle differs in every round; a loaded machine's noise in one round at most of three.
      const gaps: number[] = [];
      for (let round = 0; round < 3 && !gaps.some((g) => g < 20); round++) {
        const missingMs = await timed(() => `login=nobody${uniq()}`);
        const ms = await timed(() => `login=${name.toUpperCase()}`);
        console.log(
          `password reset request: existing user ${ms.toFixed(1)} ms, missing user ${missingMs.toFixed(1)} ms`,
        );
        gaps.push(Math.abs(ms - missingMs));
      }
      expect(Math.min(...gaps)).toBeLessThan(20);
      await smtp.waitForMail((m) => m.to.includes(`${name}@r.org`));
      await Bun.sleep(200); // the five reset mails are sent in the background; any of their tokens works
      const mail = smtp.mails.filter((m) => m.to.includes(`${name}@r.org`)).at(-1)!;
      expect(mail.text).toContain(`user_uuid=${uuid}`);
      const token = tokenIn(mail.text)!;
      r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${uuid}&token=${token}`, {
        body: { password: "new" },
      });
      expect(r.status).toBe(204);
      expect((await t.request("HEAD", `/0.1/token/${session.token}`)).status).toBe(404);
      expect(
        (
          await t.request("POST", "/0.1/token", {
            body: {},
            headers: { Authorization: `Basic ${btoa(`${name}:new`)}` },
          })
        ).status,
      ).toBe(200);
      r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${uuid}&token=${token}`, {
        body: { password: "again" },
      });
      expect(r.status).toBe(401);
      // a token for someone else is refused
      const other = await createUserRow(t.app);
      const adminToken = (await tokenFor(t.app, { acl: [`auth.users.password.reset.${other}.create`] })).token;
      r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${uuid}`, {
        token: adminToken,
        body: { password: "x" },
      });
      expect(r.status).toBe(403);
      r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${other}`, { token: adminToken, body: {} });
      expect([r.status, r.json.details.password.constraint_id]).toEqual([400, "required"]);
    });
  },
  { config: { public_url: "http://localhost", smtp: { hostname: "127.0.0.1", port: smtp.port } } },
);

describeEachDb(
  "registration",
  (get) => {
    test("creates a tenant and an unconfirmed user, mails the confirmation", async () => {
      const t = get();
      const name = `reg${uniq()}`;
      const r = await t.request("POST", "/0.1/users/register", {
        body: { username: name, password: "pw", email_address: `${name}@reg.org`, firstname: "R" },
      });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({
        username: name,
        firstname: "R",
        purpose: "user",
        authentication_method: "default",
        enabled: true,
      });
      expect(r.json.emails[0]).toMatchObject({ address: `${name}@reg.org`, main: true, confirmed: false });
      const [tenant] = await t.app.db.select().from(tenants).where(eq(tenants.uuid, r.json.tenant_uuid));
      expect([tenant!.name, tenant!.parentUuid]).toEqual([name, t.app.topTenantUuid]);
      const mail = await smtp.waitForMail((m) => m.to.includes(`${name}@reg.org`));
      expect(tokenIn(mail.text)).toBeDefined();
      const dup = await t.request("POST", "/0.1/users/register", {
        body: { username: name, password: "pw", email_address: `x${name}@reg.org` },
      });
      expect(dup.status).toBe(409);
      const bad = await t.request("POST", "/0.1/users/register", { body: { username: name } });
      expect([
        bad.status,
        bad.json.details.password.constraint_id,
        bad.json.details.email_address.constraint_id,
      ]).toEqual([400, "required", "required"]);
    });
  },
  {
    config: {
      public_url: "http://localhost",
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      enabled_http_plugins: { user_registration: true },
    },
  },
);

describeEachDb("registration disabled (the default)", (get) => {
  test("answers 404", async () => {
    const r = await get().request("POST", "/0.1/users/register", {
      body: { username: "x", password: "pw", email_address: "x@y.org" },
    });
    expect([r.status, r.json.error_id]).toEqual([404, "not-found"]);
  });
});

describeEachDb(
  "SMTP down",
  (get) => {
    test("503 with the one body and nothing half-done", async () => {
      const t = get();
      const name = `down${uniq()}`;
      const r = await t.request("POST", "/0.1/users/register", {
        body: { username: name, password: "pw", email_address: `${name}@d.org` },
      });
      expect([r.status, r.json.error_id, r.json.resource]).toEqual([503, "email-unavailable", "emails"]);
      expect(await t.app.db.select().from(users).where(eq(users.username, name))).toEqual([]);
      expect(await t.app.db.select().from(tenants).where(eq(tenants.name, name))).toEqual([]);
      const before = (await t.app.db.select().from(tokens)).length;
      const uuid = await createUserRow(t.app, { username: name, password: "pw" });
      const [e] = await t.app.db
        .insert(emails)
        .values({ address: `${name}@d.org`, main: true, confirmed: false, userUuid: uuid })
        .returning();
      const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const c = await t.request("GET", `/0.1/users/${uuid}/emails/${e!.uuid}/confirm`, { token: admin });
      expect(c.status).toBe(503);
      expect((await t.request("GET", `/0.1/users/password/reset?username=${name}`)).status).toBe(204);
      await Bun.sleep(300);
      expect((await t.app.db.select().from(tokens)).length).toBe(before + 1); // only the admin's token
    });
  },
  {
    config: {
      public_url: "http://localhost",
      smtp: { hostname: "127.0.0.1", port: closedPort(), timeout: 1 },
      enabled_http_plugins: { user_registration: true },
    },
  },
);
