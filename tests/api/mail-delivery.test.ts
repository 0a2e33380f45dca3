// What the stock mails link to and who sends them, and what happens when they cannot go: the
// default templates link to Tessera's own pages under public_url (never a third party's site), the
// sender comes from the configuration (default: noreply@ the public_url host), an administrator's
// action reports a failed send naming its cause while anonymous answers stay neutral, GET /status
// reports the last send's outcome, and a template configured at a missing path is a start warning.
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { emails } from "../../src/db/schema.ts";
import { createLogger } from "../../src/observe/log.ts";
import { createTestApp, databaseKinds, describeEachDb } from "../helpers/app.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { closedPort, startSmtp } from "../helpers/smtp-server.ts";
import { parseConfig } from "../../src/config/config.ts";
import { missingTemplates } from "../../src/services/integrations/notifications.ts";

const smtp = await startSmtp();
afterAll(() => smtp.close());
const uniq = () => crypto.randomUUID().slice(0, 8);
const PUBLIC = "https://auth.example.com/api/auth";

/** A user with a confirmed address, and an unconfirmed one; an administrator's token of its tenant. */
async function userWithMail(t: { app: Parameters<typeof createUserRow>[0] }) {
  const name = `m${uniq()}`;
  const uuid = await createUserRow(t.app, { username: name, password: "pw" });
  await t.app.db.insert(emails).values({ address: `${name}@m.org`, main: true, confirmed: true, userUuid: uuid });
  const [pending] = await t.app.db
    .insert(emails)
    .values({ address: `${name}.new@m.org`, main: false, confirmed: false, userUuid: uuid })
    .returning();
  const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
  return { name, uuid, pendingUuid: pending!.uuid, admin };
}

describeEachDb(
  "the stock mails",
  (get) => {
    test("reset and confirmation links point under public_url; the sender is noreply@ its host", async () => {
      const t = get();
      const u = await userWithMail(t);
      expect((await t.request("GET", `/0.1/users/password/reset?username=${u.name}`)).status).toBe(204);
      const reset = await smtp.waitForMail((m) => m.to.includes(`${u.name}@m.org`));
      expect(reset.text).toMatch(
        new RegExp(
          `\\n${PUBLIC}/0\\.1/pages/password-reset\\?token=[0-9a-f-]{36}&user_uuid=${u.uuid}&ui_locales=en\\r?\\n`,
        ),
      );
      expect(reset.text).not.toContain("wazo.io");
      expect(reset.from).toBe("noreply@auth.example.com");
      const r = await t.request("GET", `/0.1/users/${u.uuid}/emails/${u.pendingUuid}/confirm`, { token: u.admin });
      expect(r.status).toBe(204);
      const confirm = await smtp.waitForMail((m) => m.to.includes(`${u.name}.new@m.org`));
      expect(confirm.text).toContain(`${PUBLIC}/0.1/emails/${u.pendingUuid}/confirm?token=`);
      expect(confirm.from).toBe("noreply@auth.example.com");
      // GET /status: the last send went.
      const status = await t.request("GET", "/0.1/status", { token: u.admin });
      expect(status.json.email).toMatchObject({ status: "ok", plugin: "smtp", last_send: { ok: true } });
    });
  },
  { config: { public_url: `${PUBLIC}/`, smtp: { hostname: "127.0.0.1", port: smtp.port } } },
);

describeEachDb(
  "configured sender and wazo-auth's portal template",
  (get) => {
    test("the configured address sends; templates/wazo-portal links to the Wazo portal", async () => {
      const t = get();
      const u = await userWithMail(t);
      expect((await t.request("GET", `/0.1/users/password/reset?username=${u.name}`)).status).toBe(204);
      const mail = await smtp.waitForMail((m) => m.to.includes(`${u.name}@m.org`));
      expect(mail.from).toBe("accounts@voip.example");
      expect(mail.text).toContain("https://app.wazo.io/reset-password?host=auth.example.com&token=");
    });
  },
  {
    config: {
      public_url: PUBLIC,
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      password_reset_from_address: "accounts@voip.example",
      password_reset_email_template: join(import.meta.dir, "../../templates/wazo-portal/password_reset_email.jinja"),
    },
  },
);

describeEachDb(
  "SMTP unreachable",
  (get) => {
    test("an administrator's confirmation or reset answers 503 naming the failure; anonymous stays 204", async () => {
      const t = get();
      const u = await userWithMail(t);
      let r = await t.request("GET", `/0.1/users/${u.uuid}/emails/${u.pendingUuid}/confirm`, { token: u.admin });
      expect([r.status, r.json.error_id]).toEqual([503, "email-unavailable"]);
      expect(r.json.message).toMatch(/^The email could not be sent: .*ECONNREFUSED/);
      r = await t.request("GET", `/0.1/users/password/reset?username=${u.name}`, { token: u.admin });
      expect([r.status, r.json?.error_id]).toEqual([503, "email-unavailable"]);
      expect(r.json.details.cause).toContain("ECONNREFUSED");
      // Anonymous, a token that may not reset this user's password, an administrator of another
      // tenant: the same 204 as for anyone (each waited for until its background send was tried).
      const lastSendAt = async () =>
        (await t.request("GET", "/0.1/status", { token: u.admin })).json.email.last_send?.at as string;
      const answerThenSend = async (token?: string) => {
        const before = await lastSendAt();
        const answer = await t.request("GET", `/0.1/users/password/reset?username=${u.name}`, { token });
        for (let i = 0; i < 250 && (await lastSendAt()) === before; i++) await Bun.sleep(20);
        return answer.status;
      };
      expect(await answerThenSend()).toBe(204);
      expect(await answerThenSend((await tokenFor(t.app, { acl: ["auth.users.me.read"] })).token)).toBe(204);
      const otherTenant = (await t.request("POST", "/0.1/tenants", { token: u.admin, body: { name: uniq() } })).json;
      expect(
        await answerThenSend((await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: otherTenant.uuid })).token),
      ).toBe(204);
      const status = await t.request("GET", "/0.1/status", { token: u.admin });
      expect(status.json.email).toMatchObject({ status: "fail", last_send: { ok: false } });
      expect(status.json.email.last_send.error).toContain("ECONNREFUSED");
    });
  },
  {
    config: {
      public_url: PUBLIC,
      smtp: { hostname: "127.0.0.1", port: closedPort(), timeout: 1 },
    },
  },
);

describe("templates configured at missing paths", () => {
  test("each is named", () => {
    const config = parseConfig({
      password_reset_email_template: "/var/lib/wazo-auth/templates/password_reset_email.jinja",
      email_confirmation_subject_template: "/nonexistent/subject.jinja",
    });
    expect(missingTemplates(config)).toEqual([
      "email_confirmation_subject_template: no file at /nonexistent/subject.jinja; the mails (or page) it renders cannot be sent until it exists",
      "password_reset_email_template: no file at /var/lib/wazo-auth/templates/password_reset_email.jinja; the mails (or page) it renders cannot be sent until it exists",
    ]);
    expect(missingTemplates(parseConfig({}))).toEqual([]);
  });

  test("a warning at start", async () => {
    const lines: string[] = [];
    const t = await createTestApp(databaseKinds()[0]!, {
      config: { password_reset_email_template: "/nonexistent/reset.jinja" },
      log: createLogger("info", (l) => lines.push(l)),
    });
    try {
      for (let i = 0; i < 100 && !lines.some((l) => l.includes("/nonexistent/reset.jinja")); i++) await Bun.sleep(20);
      const line = JSON.parse(lines.find((l) => l.includes("/nonexistent/reset.jinja"))!);
      expect(line.level).toBe("warning");
      expect(line.msg).toStartWith("password_reset_email_template: no file at /nonexistent/reset.jinja");
    } finally {
      await t.close();
    }
  });
});
