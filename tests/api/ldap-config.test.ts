// GET|PUT|DELETE /0.1/backends/ldap (wazo-auth's backend and LDAP API): validation, the write-only bind
// password, and tenant isolation.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { createLogger } from "../../src/observe/log.ts";
import { tenantFamily, tokenFor } from "../helpers/fixtures.ts";

const BIND_PASSWORD = "s3cret-bind-pw-4711";
const valid = {
  host: "ldap.acme.example.com",
  port: 636,
  protocol_security: "ldaps",
  bind_dn: "cn=reader,dc=acme,dc=example",
  bind_password: BIND_PASSWORD,
  user_base_dn: "ou=people,dc=acme,dc=example",
  user_login_attribute: "uid",
  user_email_attribute: "mail",
  search_filters: "(&(objectClass=person)({user_login_attribute}={username}))",
};
const VIEW_FIELDS = [
  "tenant_uuid",
  "host",
  "port",
  "protocol_version",
  "protocol_security",
  "bind_dn",
  "user_base_dn",
  "user_login_attribute",
  "user_email_attribute",
  "search_filters",
];
const NULL_VIEW = Object.fromEntries(VIEW_FIELDS.map((k) => [k, null]));

const logLines: string[] = [];

describeEachDb(
  "LDAP configuration",
  (get) => {
    test("none: every field null; PUT 204 creates; GET shows it without the bind password", async () => {
      const t = get();
      const f = await tenantFamily(t.app);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json).toEqual(NULL_VIEW);
      const put = await t.request("PUT", "/0.1/backends/ldap", { token: f.admin, body: valid });
      expect(put.status).toBe(204);
      expect(put.text).toBe("");
      const got = await t.request("GET", "/0.1/backends/ldap", { token: f.admin });
      const { bind_password: _, ...shown } = valid;
      expect(got.json).toEqual({ ...shown, tenant_uuid: f.tenant, protocol_version: 3 });
      expect(got.text).not.toContain(BIND_PASSWORD);
      const config = await t.request("GET", "/0.1/config", { token: (await tokenFor(t.app, { acl: ["#"] })).token });
      expect(config.text).not.toContain(BIND_PASSWORD);
      expect(logLines.some((l) => l.includes("ldap config saved"))).toBe(true);
      expect(logLines.join("\n")).not.toContain(BIND_PASSWORD);
    });

    test("PUT: omitted optional fields keep their value, null clears, protocol_version back to 3", async () => {
      const t = get();
      const f = await tenantFamily(t.app);
      await t.request("PUT", "/0.1/backends/ldap", { token: f.admin, body: { ...valid, protocol_version: 2 } });
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json.protocol_version).toBe(2);
      const { bind_dn: _d, bind_password: _p, protocol_security: _s, search_filters: _f, ...required } = valid;
      expect(
        (
          await t.request("PUT", "/0.1/backends/ldap", {
            token: f.admin,
            body: { ...required, host: "other.example.com" },
          })
        ).status,
      ).toBe(204);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json).toMatchObject({
        host: "other.example.com",
        protocol_version: 3,
        protocol_security: "ldaps",
        bind_dn: valid.bind_dn,
        search_filters: valid.search_filters,
      });
      expect(
        (
          await t.request("PUT", "/0.1/backends/ldap", {
            token: f.admin,
            body: { ...required, bind_dn: null, protocol_security: null, search_filters: null },
          })
        ).status,
      ).toBe(204);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json).toMatchObject({
        bind_dn: null,
        protocol_security: null,
        search_filters: null,
      });
    });

    test("invalid bodies: 400 invalid-data naming each field, nothing written", async () => {
      const t = get();
      const f = await tenantFamily(t.app);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ host: "x".repeat(513) }, "host"],
        [{ host: "ldap://ldap.example.com" }, "host"],
        [{ host: "reader@ldap.example.com" }, "host"],
        [{ host: "ldap.example.com:389" }, "host"],
        [{ host: undefined }, "host"],
        [{ port: "abc" }, "port"],
        [{ port: 70000 }, "port"],
        [{ protocol_version: 4 }, "protocol_version"],
        [{ protocol_security: "ssl" }, "protocol_security"],
        [{ bind_dn: "x".repeat(257) }, "bind_dn"],
        [{ user_base_dn: "x".repeat(257) }, "user_base_dn"],
        [{ user_base_dn: undefined }, "user_base_dn"],
        [{ user_login_attribute: "a".repeat(65) }, "user_login_attribute"],
        [{ user_login_attribute: "uid=*" }, "user_login_attribute"],
        [{ user_email_attribute: "" }, "user_email_attribute"],
        [{ search_filters: "(uid={login})" }, "search_filters"],
        [{ search_filters: "(uid={username}" }, "search_filters"],
      ];
      for (const [change, field] of cases) {
        const r = await t.request("PUT", "/0.1/backends/ldap", { token: f.admin, body: { ...valid, ...change } });
        expect(r.status).toBe(400);
        expect(r.json).toMatchObject({ error_id: "invalid-data", message: "Invalid request", resource: "ldap_config" });
        expect(r.json.details[field].constraint_id).toBeString();
      }
      const malformed = await t.request("PUT", "/0.1/backends/ldap", { token: f.admin, rawBody: "{nope" });
      expect(malformed.status).toBe(400);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json).toEqual(NULL_VIEW);
    });

    test("DELETE removes, and answers 204 when there is nothing", async () => {
      const t = get();
      const f = await tenantFamily(t.app);
      await t.request("PUT", "/0.1/backends/ldap", { token: f.admin, body: valid });
      expect((await t.request("DELETE", "/0.1/backends/ldap", { token: f.admin })).status).toBe(204);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json).toEqual(NULL_VIEW);
      expect((await t.request("DELETE", "/0.1/backends/ldap", { token: f.admin })).status).toBe(204);
    });

    test("ACLs: read, update and delete each need their own access", async () => {
      const t = get();
      const f = await tenantFamily(t.app);
      const reader = (await tokenFor(t.app, { acl: ["auth.backends.ldap.read"], tenantUuid: f.tenant })).token;
      expect((await t.request("GET", "/0.1/backends/ldap", { token: reader })).status).toBe(200);
      const put = await t.request("PUT", "/0.1/backends/ldap", { token: reader, body: valid });
      expect(put.status).toBe(403);
      expect(put.json.details.required_access).toBe("auth.backends.ldap.update");
      expect((await t.request("DELETE", "/0.1/backends/ldap", { token: reader })).status).toBe(403);
      expect((await t.request("GET", "/0.1/backends/ldap")).status).toBe(401);
    });

    test("tenant isolation: siblings and children never see or change a tenant's directory; a parent acts in a child with Wazo-Tenant", async () => {
      const t = get();
      const f = await tenantFamily(t.app);
      await t.request("PUT", "/0.1/backends/ldap", { token: f.admin, body: valid });
      // a sibling and a child read their own (none), never the tenant's
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.siblingAdmin })).json).toEqual(NULL_VIEW);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.childAdmin })).json).toEqual(NULL_VIEW);
      // naming the tenant in Wazo-Tenant is refused from a sibling or a child (calling up)
      for (const token of [f.siblingAdmin, f.childAdmin]) {
        for (const method of ["GET", "PUT", "DELETE"]) {
          const r = await t.request(method, "/0.1/backends/ldap", {
            token,
            tenant: f.tenant,
            body: method === "PUT" ? { ...valid, host: "evil.example.com" } : undefined,
          });
          expect(r.status).toBe(401);
          expect(r.json.error_id).toBe("unauthorized-tenant");
        }
      }
      // their own PUT and DELETE touch only their own tenant
      await t.request("PUT", "/0.1/backends/ldap", {
        token: f.siblingAdmin,
        body: { ...valid, host: "sibling.example.com" },
      });
      await t.request("DELETE", "/0.1/backends/ldap", { token: f.childAdmin });
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json).toMatchObject({
        tenant_uuid: f.tenant,
        host: valid.host,
      });
      // the parent configures the child's directory through Wazo-Tenant
      expect(
        (
          await t.request("PUT", "/0.1/backends/ldap", {
            token: f.admin,
            tenant: f.child,
            body: { ...valid, host: "child.example.com" },
          })
        ).status,
      ).toBe(204);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.childAdmin })).json).toMatchObject({
        tenant_uuid: f.child,
        host: "child.example.com",
      });
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.admin })).json.host).toBe(valid.host);
      expect((await t.request("DELETE", "/0.1/backends/ldap", { token: f.admin, tenant: f.child })).status).toBe(204);
      expect((await t.request("GET", "/0.1/backends/ldap", { token: f.childAdmin })).json).toEqual(NULL_VIEW);
    });
  },
  { log: createLogger("debug", (line) => logLines.push(line)) },
);

describeEachDb(
  "LDAP configuration, wazo-auth PUT answers",
  (get) => {
    test("with compatibility.put_responses: wazo, PUT answers 200 with the stored view, never the bind password", async () => {
      const t = get();
      const f = await tenantFamily(t.app);
      const r = await t.request("PUT", "/0.1/backends/ldap", { token: f.admin, body: { ...valid, host: "::1" } });
      expect(r.status).toBe(200);
      const { bind_password: _, ...shown } = valid;
      expect(r.json).toEqual({ ...shown, host: "::1", tenant_uuid: f.tenant, protocol_version: 3 });
      expect(r.text).not.toContain(BIND_PASSWORD);
    });
  },
  { config: { compatibility: { put_responses: "wazo" } } },
);
