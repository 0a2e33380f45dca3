// What a request may claim about where it comes from: the Host header never shapes a mailed link
// (with `public_url` the link is the configured one; without it no link is mailed), and
// X-Forwarded-For counts only from trusted proxies, only as an IP address, never as an exemption.
import { afterAll, expect, test } from "bun:test";
import { emails } from "../../src/db/schema.ts";
import { parseConfig } from "../../src/config/config.ts";
import { publicConnection } from "../../src/services/integrations/notifications.ts";
import { configWarnings } from "../../src/config/warnings.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { startSmtp } from "../helpers/smtp-server.ts";

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
      expect(mail.text).toContain("https://auth.example.com:8443/api/auth/0.1/pages/password-reset?token=");
      expect(mail.text).not.toContain("evil.example");
      expect(mail.text).not.toContain(":666"); // the port (a bare "666" may occur in a random id)
    });

    test("email confirmation: hostname, port and prefix from public_url", async () => {
      const t = get();
      const name = `cat${uniq()}`;
      const uuid = await createUserRow(t.app, { username: name });
      const [e] = await t.app.db
        .insert(emails)
        .values({ address: `${name}@c.org`, main: true, confirmed: false, userUuid: uuid })
        .returning();
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
      const r = await t.request("POST", "/0.1/users/register", {
        body: { username: name, password: "pw", email_address: `${name}@r.org` },
        headers: evil,
      });
      expect(r.status).toBe(200);
      const mail = await smtp.waitForMail((m) => m.to.includes(`${name}@r.org`));
      expect(mail.text).toContain("https://auth.example.com:8443/api/auth/0.1/emails/");
      expect(mail.text).not.toContain("evil.example");
    });
  },
  {
    config: {
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      public_url: "https://auth.example.com:8443/api/auth/",
      enabled_http_plugins: { user_registration: true },
    },
  },
);

test("public_url: http(s) only; an explicit port is kept; the path is the prefix", () => {
  expect(publicConnection("https://auth.example.com:443/api/auth")).toEqual({
    hostname: "auth.example.com",
    port: "443",
    prefix: "/api/auth",
  });
  expect(publicConnection("https://auth.example.com")).toEqual({
    hostname: "auth.example.com",
    port: null,
    prefix: "",
  });
  expect(publicConnection("http://[2001:db8::1]:9497/")).toEqual({
    hostname: "[2001:db8::1]",
    port: "9497",
    prefix: "",
  });
  expect(publicConnection(null)).toBeNull();
  expect(() => parseConfig({ public_url: "javascript:alert(1)" })).toThrow(/public_url/);
  expect(() => parseConfig({ public_url: "not a url" })).toThrow(/public_url/);
});

describeEachDb(
  "without public_url no link is mailed: 503 naming the setting, the same for every user",
  (get) => {
    test("password reset, confirmation and registration answer 503 missing-configuration; nothing is sent or created", async () => {
      const t = get();
      const name = `nopub${uniq()}`;
      const uuid = await createUserRow(t.app, { username: name, password: "pw" });
      const [e] = await t.app.db
        .insert(emails)
        .values({ address: `${name}@n.org`, main: true, confirmed: false, userUuid: uuid })
        .returning();
      const before = smtp.mails.length;
      const expectMissing = (r: { status: number; json: any }, resource: string) =>
        expect([r.status, r.json.error_id, r.json.resource, r.json.details]).toEqual([
          503,
          "missing-configuration",
          resource,
          { missing_config: "public_url" },
        ]);
      // Known and unknown logins get the very same answer: the refusal reveals no user.
      const known = await t.request("GET", `/0.1/users/password/reset?username=${name}`, { headers: evil });
      const unknown = await t.request("GET", `/0.1/users/password/reset?username=ghost${uniq()}`, { headers: evil });
      expectMissing(known, "reset");
      expect({ ...unknown.json, timestamp: 0 }).toEqual({ ...known.json, timestamp: 0 });
      expect(known.json.message).toContain("public_url");
      const admin = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      expectMissing(
        await t.request("GET", `/0.1/users/${uuid}/emails/${e!.uuid}/confirm`, { token: admin, headers: evil }),
        "emails",
      );
      const reg = await t.request("POST", "/0.1/users/register", {
        body: { username: `reg${name}`, password: "pw", email_address: `reg${name}@n.org` },
        headers: evil,
      });
      expectMissing(reg, "users");
      expect((await t.request("GET", `/0.1/users?search=reg${name}`, { token: admin })).json.filtered).toBe(0);
      await Bun.sleep(200); // a mail sent in the background would have arrived by now
      expect(smtp.mails.length).toBe(before);
    });

    test("a start-up warning names public_url (and num_proxies without trusted_proxies)", () => {
      expect(configWarnings(parseConfig({})).join("\n")).toContain("public_url is not set");
      expect(configWarnings(parseConfig({ public_url: "https://a.example" }))).toEqual([]);
      expect(
        configWarnings(parseConfig({ public_url: "https://a.example", rest_api: { num_proxies: 1 } }))[0],
      ).toContain("rest_api.trusted_proxies");
      expect(
        configWarnings(
          parseConfig({ public_url: "https://a.example", rest_api: { num_proxies: 1, trusted_proxies: ["10.0.0.1"] } }),
        ),
      ).toEqual([]);
    });
  },
  { config: { smtp: { hostname: "127.0.0.1", port: smtp.port }, enabled_http_plugins: { user_registration: true } } },
);

const PROXIES = ["10.0.0.0/8", "2001:db8:ffff::/48"];

describeEachDb(
  "X-Forwarded-For is believed only from trusted proxies",
  (get) => {
    const addrOf = async (t: ReturnType<typeof get>, name: string, peer: string, xff?: string) =>
      (
        await t.request("POST", "/0.1/token", {
          body: {},
          remoteAddr: peer,
          headers: {
            Authorization: `Basic ${btoa(`${name}:pw`)}`,
            ...(xff === undefined ? {} : { "X-Forwarded-For": xff }),
          },
        })
      ).json.data.remote_addr;

    test("by default no proxy is trusted: a client talking directly cannot choose its address", async () => {
      const t = get();
      const name = `direct${uniq()}`;
      await createUserRow(t.app, { username: name, password: "pw" });
      t.app.config.rest_api.trusted_proxies = [];
      try {
        for (const forged of ["127.0.0.1", "203.0.113.9", "10.0.0.1, 198.51.100.1", "::1"])
          expect(await addrOf(t, name, "192.0.2.10", forged)).toBe("192.0.2.10");
      } finally {
        t.app.config.rest_api.trusted_proxies = PROXIES;
      }
    });

    test("an untrusted peer's header is ignored; behind trusted proxies the walk from the right stops at the first untrusted address", async () => {
      const t = get();
      const name = `chain${uniq()}`;
      await createUserRow(t.app, { username: name, password: "pw" });
      expect(await addrOf(t, name, "192.0.2.10", "203.0.113.9")).toBe("192.0.2.10"); // the peer is no proxy of ours
      expect(await addrOf(t, name, "10.0.0.1", "203.0.113.9")).toBe("203.0.113.9");
      // The client forged entries on the left; two trusted proxies appended theirs on the right.
      expect(await addrOf(t, name, "10.0.0.1", "127.0.0.1, 1.2.3.4, 198.51.100.7, 10.9.9.9")).toBe("198.51.100.7");
      expect(await addrOf(t, name, "::ffff:10.0.0.1", "198.51.100.7")).toBe("198.51.100.7"); // IPv4-mapped peer
      expect(await addrOf(t, name, "2001:db8:ffff::1", "2001:db8:1::7, [2001:db8:ffff::2]")).toBe("2001:db8:1::7");
      expect(await addrOf(t, name, "2001:db8:fffe::1", "2001:db8:1::7")).toBe("2001:db8:fffe::1"); // outside the /48
      // Not an address: the walk ends at the last address a trusted proxy vouched for.
      for (const junk of ["<script>alert(1)</script>", "evil.example", "203.0.113.9:4444", "unknown"])
        expect(await addrOf(t, name, "10.0.0.1", junk)).toBe("10.0.0.1");
      expect(await addrOf(t, name, "10.0.0.1", "203.0.113.9, ' or 1=1, 10.0.0.2")).toBe("10.0.0.2");
      expect(await addrOf(t, name, "10.0.0.1", "10.0.0.5, 10.0.0.2")).toBe("10.0.0.5"); // all proxies: the farthest
    });

    test("a forwarded address is never exempt from throttling, even a forged or proxied loopback", async () => {
      const t = get();
      const settings = t.app.config.login_throttling;
      const saved = settings.max_failures_per_address;
      settings.max_failures_per_address = 3;
      try {
        const attempt = (peer: string, xff?: string) =>
          t.request("POST", "/0.1/token", {
            body: {},
            remoteAddr: peer,
            headers: { Authorization: `Basic ${btoa(`spray${uniq()}:x`)}`, ...(xff ? { "X-Forwarded-For": xff } : {}) },
          });
        // Directly, a forged loopback is the attacker's own address: throttled.
        for (let i = 0; i < 3; i++) expect((await attempt("192.0.2.55", "127.0.0.1")).status).toBe(401);
        expect((await attempt("192.0.2.55", "127.0.0.1")).status).toBe(429);
        // Through a trusted proxy that says 127.0.0.1 (a forged entry cannot get there): still throttled.
        for (let i = 0; i < 3; i++) expect((await attempt("10.0.0.1", "127.0.0.1")).status).toBe(401);
        expect((await attempt("10.0.0.1", "127.0.0.1")).status).toBe(429);
        // The local daemons themselves, unproxied, stay exempt.
        for (let i = 0; i < 5; i++) expect((await attempt("127.0.0.1")).status).toBe(401);
      } finally {
        settings.max_failures_per_address = saved;
      }
    });

    test("trusted_proxies: addresses and CIDRs only", () => {
      expect(
        parseConfig({ rest_api: { trusted_proxies: ["10.0.0.0/8", "::1", "2001:db8::/32", "192.0.2.1"] } }).rest_api
          .trusted_proxies,
      ).toHaveLength(4);
      for (const bad of ["10.0.0.0/33", "proxy.example", "10.0.0.0/8/1", "::1/129", ""])
        expect(() => parseConfig({ rest_api: { trusted_proxies: [bad] } })).toThrow(/trusted_proxies/);
    });
  },
  { config: { rest_api: { trusted_proxies: PROXIES } } },
);
