// What a request may claim about where it comes from: the Host header never shapes a mailed link
// once `public_url` is set (reset-link poisoning), and X-Forwarded-For counts only as an IP address.
import { afterAll, expect, test } from "bun:test";
import { emails } from "../src/db/schema.ts";
import { parseConfig } from "../src/config.ts";
import { publicConnection } from "../src/services/integrations/notifications.ts";
import { describeEachDb } from "./helpers/app.ts";
import { createUserRow, tokenFor } from "./helpers/fixtures.ts";
import { startSmtp } from "./helpers/smtp-server.ts";

const smtp = await startSmtp();
afterAll(() => smtp.close());
const uniq = () => crypto.randomUUID().slice(0, 8);
const evil = { Host: "evil.example:666", "X-Script-Name": "/phish" };

describeEachDb(
  "links in mails come from public_url, never from the request",
  (get) => {
    test("password reset: a forged Host header does not reach the link", async () => {
      const t = get();
      const name = `pat${uniq()}`;
      const uuid = await createUserRow(t.app, { username: name, password: "pw" });
      await t.app.db.insert(emails).values({ address: `${name}@p.org`, main: true, confirmed: true, userUuid: uuid });
      const r = await t.request("GET", `/0.1/users/password/reset?username=${name}`, { headers: evil });
      expect(r.status).toBe(204);
      const mail = await smtp.waitForMail((m) => m.to.includes(`${name}@p.org`));
      expect(mail.text).toContain("host=auth.example.com:8443&token=");
      expect(mail.text).not.toContain("evil.example");
      expect(mail.text).not.toContain(":666"); // the port (a bare "666" may occur in a random id)
    });

    test("email confirmation: hostname, port and prefix from public_url", async () => {
      const t = get();
      const name = `cat${uniq()}`;
      const uuid = await createUserRow(t.app, { username: name });
      const [e] = await t.app.db.insert(emails).values({ address: `${name}@c.org`, main: true, confirmed: false, userUuid: uuid }).returning();
      const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const r = await t.request("GET", `/0.1/users/${uuid}/emails/${e!.uuid}/confirm`, { token: admin, headers: evil });
      expect(r.status).toBe(204);
      const mail = await smtp.waitForMail((m) => m.to.includes(`${name}@c.org`));
      expect(mail.text).toContain(`https://auth.example.com:8443/api/auth/0.1/emails/${e!.uuid}/confirm?token=`);
      expect(mail.text).not.toContain("evil.example");
      expect(mail.text).not.toContain("/phish");
    });

    test("registration: the confirmation link too", async () => {
      const t = get();
      const name = `rat${uniq()}`;
      const r = await t.request("POST", "/0.1/users/register", { body: { username: name, password: "pw", email_address: `${name}@r.org` }, headers: evil });
      expect(r.status).toBe(200);
      const mail = await smtp.waitForMail((m) => m.to.includes(`${name}@r.org`));
      expect(mail.text).toContain("https://auth.example.com:8443/api/auth/0.1/emails/");
      expect(mail.text).not.toContain("evil.example");
    });
  },
  { config: { smtp: { hostname: "127.0.0.1", port: smtp.port }, public_url: "https://auth.example.com:8443/api/auth/", enabled_http_plugins: { user_registration: true } } },
);

test("public_url: http(s) only; an explicit port is kept; the path is the prefix", () => {
  expect(publicConnection("https://auth.example.com:443/api/auth")).toEqual({ hostname: "auth.example.com", port: "443", prefix: "/api/auth" });
  expect(publicConnection("https://auth.example.com")).toEqual({ hostname: "auth.example.com", port: null, prefix: "" });
  expect(publicConnection("http://[2001:db8::1]:9497/")).toEqual({ hostname: "[2001:db8::1]", port: "9497", prefix: "" });
  expect(publicConnection(null)).toBeNull();
  expect(() => parseConfig({ public_url: "javascript:alert(1)" })).toThrow(/public_url/);
  expect(() => parseConfig({ public_url: "not a url" })).toThrow(/public_url/);
});

describeEachDb("X-Forwarded-For", (get) => {
  test("only an IP address (v4 or v6) becomes the token's remote_addr; anything else is the peer's", async () => {
    const t = get();
    const name = `xff${uniq()}`;
    await createUserRow(t.app, { username: name, password: "pw" });
    const login = async (xff: string) =>
      (await t.request("POST", "/0.1/token", { body: {}, remoteAddr: "192.0.2.10", headers: { Authorization: `Basic ${btoa(`${name}:pw`)}`, "X-Forwarded-For": xff } })).json.data.remote_addr;
    expect(await login("<script>alert(1)</script>")).toBe("192.0.2.10");
    expect(await login("evil.example")).toBe("192.0.2.10");
    expect(await login("203.0.113.9:4444")).toBe("192.0.2.10");
    expect(await login("203.0.113.9, ' or 1=1")).toBe("192.0.2.10");
    expect(await login("203.0.113.9")).toBe("203.0.113.9");
    expect(await login("10.0.0.1, 2001:db8::7")).toBe("2001:db8::7");
  });
});
