// LDAP logins (wazo-auth's identity-provider plugins) against a real OpenLDAP slapd started for this file, over
// plain LDAP, STARTTLS and ldaps:// with a certificate authority made for the test.
import { afterAll, expect, test } from "bun:test";
import { createServer, type Server } from "node:net";
import { createTestApp, describeEachDb, type TestApp } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import { ACME_LDIF, PEOPLE_DN, SERVICE_DN, SERVICE_PASSWORD } from "../helpers/ldap-directory.ts";
import { BASE_DN, startSlapd } from "../helpers/slapd.ts";
import { startSmtp } from "../helpers/smtp-server.ts";
import { requestPasswordReset } from "../../src/services/auth/password-reset.ts";

const slapd = await startSlapd(ACME_LDIF);
const smtp = await startSmtp();
afterAll(async () => {
  await slapd.close();
  await smtp.close();
});

const basic = (login: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${login}:${password}`, "utf8").toString("base64")}`,
});

interface Acme {
  tenant: string;
  admin: string;
  users: Record<string, string>;
}

const searchMode = () => ({
  host: slapd.host,
  port: slapd.port,
  bind_dn: SERVICE_DN,
  bind_password: SERVICE_PASSWORD,
  user_base_dn: BASE_DN,
  user_login_attribute: "uid",
  user_email_attribute: "mail",
  protocol_security: null,
  search_filters: null,
});

/** ACME (domain acme.example.com, slug acme) and its users, made through the API. */
async function setUpAcme(t: TestApp): Promise<Acme> {
  const master = await adminToken(t.app);
  const tenant = await t.request("POST", "/0.1/tenants", {
    token: master,
    body: { name: "ACME", slug: "acme", domain_names: ["acme.example.com"], default_authentication_method: "ldap" },
  });
  expect(tenant.status).toBe(200);
  const scoped = { token: master, tenant: tenant.json.uuid };
  const users: Record<string, string> = {};
  const add = async (key: string, body: Record<string, unknown>) => {
    const r = await t.request("POST", "/0.1/users", { ...scoped, body });
    expect(r.status).toBe(200);
    users[key] = r.json.uuid;
  };
  await add("alice", {
    username: "alice",
    email_address: "alice@acme.example.com",
    authentication_method: "ldap",
    password: "alice-native",
  });
  await add("bob", {
    username: "bob",
    email_address: "bob@acme.example.com",
    authentication_method: "native",
    password: "bob-native",
  });
  await add("smith", { username: "jsmith", email_address: "John.Smith@acme.example.com" }); // method default → tenant's ldap
  await add("twin1", { email_address: "twin1@acme.example.com", authentication_method: "ldap" });
  const policy = await t.request("POST", "/0.1/policies", {
    ...scoped,
    body: { name: "ldap-people", acl: ["confd.users.me.read"] },
  });
  expect((await t.request("PUT", `/0.1/users/${users.alice}/policies/${policy.json.uuid}`, scoped)).status).toBe(204);
  const admin = master;
  return { tenant: tenant.json.uuid, admin, users };
}

describeEachDb(
  "LDAP login",
  (get) => {
    let acme: Acme;
    const configure = async (body: Record<string, unknown>) => {
      const t = get();
      const r = await t.request("PUT", "/0.1/backends/ldap", {
        token: acme.admin,
        tenant: acme.tenant,
        body: { ...searchMode(), ...body },
      });
      expect(r.status).toBe(204);
    };
    const ldapLogin = (
      login: string,
      password: string,
      body: Record<string, unknown> = { domain_name: "acme.example.com" },
      t = get(),
    ) => t.request("POST", "/0.1/token", { headers: basic(login, password), body });

    test("setup: ACME and its users", async () => {
      acme = await setUpAcme(get());
      await configure({});
    });

    test("GET /backends and GET /idp list ldap_user and ldap", async () => {
      const t = get();
      expect((await t.request("GET", "/0.1/backends")).json).toEqual({ data: ["wazo_user", "ldap_user"] });
      const idp = await t.request("GET", "/0.1/idp", { token: acme.admin });
      // The three stock IdPs: saml, ldap and oidc (tenants' upstream OpenID providers, docs/federation.md).
      expect(idp.json.items.sort()).toEqual(["default", "ldap", "native", "oidc", "saml"]);
    });

    test("service-account search: login by domain_name gives the matching user's token", async () => {
      const r = await ldapLogin("alice", "alice-ldap");
      expect(r.status).toBe(200);
      expect(r.json.data.auth_id).toBe(acme.users.alice);
      expect(r.json.data.metadata).toMatchObject({
        uuid: acme.users.alice,
        tenant_uuid: acme.tenant,
        username: "alice@acme.example.com",
        purpose: "user",
      });
      expect(r.json.data.acl).toContain("confd.users.me.read");
    });

    test("login by tenant_id, as uuid or slug; an unknown tenant is refused", async () => {
      expect((await ldapLogin("alice", "alice-ldap", { tenant_id: acme.tenant })).json.data.auth_id).toBe(
        acme.users.alice,
      );
      expect((await ldapLogin("alice", "alice-ldap", { tenant_id: "acme" })).json.data.auth_id).toBe(acme.users.alice);
      expect((await ldapLogin("alice", "alice-ldap", { tenant_id: "nope" })).status).toBe(401);
      expect((await ldapLogin("alice", "alice-ldap", { domain_name: "nope.example.com" })).status).toBe(401);
      expect((await ldapLogin("alice", "alice-ldap", { domain_name: "ACME.example.COM" })).status).toBe(200);
    });

    test("wrong password, unknown user, user without email, two matches: 401", async () => {
      for (const [login, password] of [
        ["alice", "wrong"],
        ["ghost", "alice-ldap"],
        ["nomail", "nomail-ldap"],
        ["twin", "twin-ldap"],
        ["stranger", "stranger-ldap"],
      ]) {
        const r = await ldapLogin(login!, password!);
        expect(r.status).toBe(401);
        expect(r.json.error_id).toBe("authentication-failed");
      }
    });

    test("filter injection attempts log nobody in", async () => {
      for (const login of [
        "al*",
        "*",
        "*)(uid=*",
        "admin)(|(x=*",
        "alice)(|(uid=*",
        "alice\u0000",
        "alice\u0000)(uid=*",
      ]) {
        expect((await ldapLogin(login, "alice-ldap")).status).toBe(401);
      }
      // and an empty password is never an (anonymous) bind
      expect(
        (
          await get().request("POST", "/0.1/token", {
            headers: { Authorization: `Basic ${btoa("alice:")}` },
            body: { domain_name: "acme.example.com" },
          })
        ).status,
      ).toBe(401);
    });

    test("the user's method must be ldap: a native user is refused through LDAP, an ldap user through native", async () => {
      expect((await ldapLogin("bob", "bob-ldap")).status).toBe(401);
      const t = get();
      expect((await t.request("POST", "/0.1/token", { headers: basic("bob", "bob-native"), body: {} })).status).toBe(
        200,
      );
      expect(
        (await t.request("POST", "/0.1/token", { headers: basic("alice", "alice-native"), body: {} })).status,
      ).toBe(401);
      // PUT /idp/ldap/users moves bob to LDAP (and native login stops), PUT /idp/native/users/{u} back
      expect(
        (
          await t.request("PUT", "/0.1/idp/ldap/users", {
            token: acme.admin,
            tenant: acme.tenant,
            body: { users: [{ uuid: acme.users.bob }] },
          })
        ).status,
      ).toBe(204);
      expect((await ldapLogin("bob", "bob-ldap")).json.data.auth_id).toBe(acme.users.bob);
      expect((await t.request("POST", "/0.1/token", { headers: basic("bob", "bob-native"), body: {} })).status).toBe(
        401,
      );
      expect(
        (await t.request("PUT", `/0.1/idp/native/users/${acme.users.bob}`, { token: acme.admin, tenant: acme.tenant }))
          .status,
      ).toBe(204);
      expect((await ldapLogin("bob", "bob-ldap")).status).toBe(401);
      // `default` follows the tenant's default_authentication_method (ldap here)
      expect((await ldapLogin("smith, john", "smith-ldap")).json.data.auth_id).toBe(acme.users.smith);
    });

    test("custom search_filters: placeholders filled with escaped values", async () => {
      await configure({
        search_filters:
          "(&(objectClass=inetOrgPerson)(|({user_login_attribute}={username})(employeeNumber={username})))",
      });
      expect((await ldapLogin("1001", "alice-ldap")).json.data.auth_id).toBe(acme.users.alice);
      expect((await ldapLogin("alice", "alice-ldap")).status).toBe(200);
      expect((await ldapLogin("10*", "alice-ldap")).status).toBe(401);
      await configure({ search_filters: null });
    });

    test("direct DN mode (no service account): the DN is built with DN escaping", async () => {
      await configure({ bind_dn: null, bind_password: null, user_base_dn: PEOPLE_DN });
      expect((await ldapLogin("alice", "alice-ldap")).json.data.auth_id).toBe(acme.users.alice);
      expect((await ldapLogin("smith, john", "smith-ldap")).json.data.auth_id).toBe(acme.users.smith);
      expect((await ldapLogin("alice", "wrong")).status).toBe(401);
      expect((await ldapLogin("nomail", "nomail-ldap")).status).toBe(401);
      expect((await ldapLogin(`alice,${PEOPLE_DN}`, "alice-ldap")).status).toBe(401);
      expect((await ldapLogin("alice+cn=alice", "alice-ldap")).status).toBe(401);
      await configure({ bind_dn: SERVICE_DN, bind_password: SERVICE_PASSWORD, user_base_dn: BASE_DN });
    });

    test("STARTTLS and ldaps:// with a trusted CA", async () => {
      await configure({ protocol_security: "tls" });
      expect((await ldapLogin("alice", "alice-ldap")).status).toBe(200);
      await configure({ protocol_security: "ldaps", port: slapd.ldapsPort });
      expect((await ldapLogin("alice", "alice-ldap")).status).toBe(200);
      await configure({ protocol_security: null, port: slapd.port });
    });

    test("an untrusted certificate is refused (ldaps:// and STARTTLS)", async () => {
      const other = await createTestApp(get().kind, { config: { ldap: { tls_ca_file: slapd.otherCaFile } } });
      try {
        const acme2 = await setUpAcme(other);
        for (const security of [{ protocol_security: "ldaps", port: slapd.ldapsPort }, { protocol_security: "tls" }]) {
          const put = await other.request("PUT", "/0.1/backends/ldap", {
            token: acme2.admin,
            tenant: acme2.tenant,
            body: { ...searchMode(), ...security },
          });
          expect(put.status).toBe(204);
          expect((await ldapLogin("alice", "alice-ldap", { domain_name: "acme.example.com" }, other)).status).toBe(401);
        }
        // the same directory in plain LDAP works: only the certificate was refused
        await other.request("PUT", "/0.1/backends/ldap", {
          token: acme2.admin,
          tenant: acme2.tenant,
          body: searchMode(),
        });
        expect((await ldapLogin("alice", "alice-ldap", { domain_name: "acme.example.com" }, other)).status).toBe(200);
      } finally {
        await other.close();
      }
    });

    test("refresh tokens of an LDAP login refresh through ldap_user, even with the directory down", async () => {
      const t = get();
      const first = await t.request("POST", "/0.1/token", {
        headers: basic("alice", "alice-ldap"),
        body: { domain_name: "acme.example.com", access_type: "offline", client_id: "ldap-app" },
      });
      expect(first.status).toBe(200);
      const rt = first.json.data.refresh_token;
      const list = await t.request("GET", `/0.1/users/${acme.users.alice}/tokens`, { token: acme.admin });
      expect(list.json.items.find((i: { client_id: string }) => i.client_id === "ldap-app")).toBeTruthy();
      await slapd.stop();
      let refreshed;
      try {
        refreshed = await t.request("POST", "/0.1/token", { body: { refresh_token: rt, client_id: "ldap-app" } });
      } finally {
        await slapd.start();
      }
      expect(refreshed.status).toBe(200);
      expect(refreshed.json.data.auth_id).toBe(acme.users.alice);
      expect(refreshed.json.data.metadata).toMatchObject({
        uuid: acme.users.alice,
        username: "alice@acme.example.com",
      });
      expect(refreshed.json.data.acl).toContain("confd.users.me.read");
    });

    test("a tenant without LDAP configuration refuses LDAP logins", async () => {
      const t = get();
      const master = await adminToken(t.app);
      const other = await t.request("POST", "/0.1/tenants", {
        token: master,
        body: { name: "Other", domain_names: ["other.example.com"], default_authentication_method: "ldap" },
      });
      await t.request("POST", "/0.1/users", {
        token: master,
        tenant: other.json.uuid,
        body: { username: "stranger", email_address: "stranger@acme.example.com" },
      });
      expect((await ldapLogin("stranger", "stranger-ldap", { domain_name: "other.example.com" })).status).toBe(401);
      // nor may ACME's directory log in a user of another tenant
      expect((await ldapLogin("stranger", "stranger-ldap")).status).toBe(401);
    });

    test("LDAP users cannot change or reset their password (405)", async () => {
      const t = get();
      const change = await t.request("PUT", `/0.1/users/${acme.users.alice}/password`, {
        token: acme.admin,
        body: { old_password: "alice-native", new_password: "x" },
      });
      expect(change.status).toBe(405);
      expect(change.json).toMatchObject({ error_id: "password-managed-externally", resource: "users" });
      const reset = await t.request("POST", `/0.1/users/password/reset?user_uuid=${acme.users.alice}`, {
        token: acme.admin,
        body: { password: "x" },
      });
      expect(reset.status).toBe(405);
      expect((await t.request("POST", "/0.1/token", { headers: basic("alice", "x"), body: {} })).status).toBe(401);
      // asking for a reset mails nobody for an LDAP user (a native one does get the mail)
      const conn = { hostname: "auth.example.com", port: "443", prefix: "" };
      const before = smtp.mails.length;
      await (
        await requestPasswordReset(t.app, { login: "alice@acme.example.com" }, conn, {
          address: "127.0.0.1",
          forwarded: false,
        })
      ).done;
      await (await requestPasswordReset(t.app, { login: "bob" }, conn, { address: "127.0.0.1", forwarded: false }))
        .done;
      await smtp.waitForMail((m) => m.to.includes("bob@acme.example.com"));
      expect(smtp.mails.slice(before).flatMap((m) => m.to)).toEqual(["bob@acme.example.com"]);
    });

    test("a silent directory answers 401 within the timeout while other requests are served", async () => {
      const t = get();
      const sockets: import("node:net").Socket[] = [];
      const silent: Server = createServer((s) => void sockets.push(s)); // accepts, never answers
      await new Promise<void>((r) => silent.listen(0, "127.0.0.1", () => r()));
      try {
        await configure({ port: (silent.address() as { port: number }).port });
        const started = Date.now();
        let ldapDone = false;
        const pending = ldapLogin("alice", "alice-ldap").then((r) => ((ldapDone = true), r));
        const native = await t.request("POST", "/0.1/token", { headers: basic("bob", "bob-native"), body: {} });
        expect(native.status).toBe(200);
        expect(ldapDone).toBe(false); // served while the LDAP login was still waiting
        const r = await pending;
        expect(r.status).toBe(401);
        expect(Date.now() - started).toBeLessThan(4000); // the 2 s timeout, not a hang
        expect(sockets.length).toBeGreaterThan(0);
      } finally {
        for (const s of sockets) s.destroy();
        silent.close();
        await configure({});
      }
    });

    test("a directory stopped mid-run answers 401 and recovers when it is back", async () => {
      await slapd.stop();
      try {
        const started = Date.now();
        expect((await ldapLogin("alice", "alice-ldap")).status).toBe(401);
        expect(Date.now() - started).toBeLessThan(4000);
        expect(
          (await get().request("POST", "/0.1/token", { headers: basic("bob", "bob-native"), body: {} })).status,
        ).toBe(200);
      } finally {
        await slapd.start();
      }
      expect((await ldapLogin("alice", "alice-ldap")).status).toBe(200);
    });
  },
  {
    config: {
      ldap: { tls_ca_file: slapd.caFile },
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      public_url: "https://auth.example.com",
    },
  },
);
