// Strict host names (as Keycloak's strict hostname): without `public_url`, a request naming another
// host than the listener's own address, a loopback name or an `accepted_hosts` entry gets 421 on
// the OpenID provider (JSON), the hosted pages and the console (a page), never an issuer built from
// its Host; the wazo-auth REST API answers daemons through any name, and `public_url` fixes the
// issuer whatever the request says.
import { expect, test } from "bun:test";
import { createHandler } from "../../src/app.ts";
import { configWarnings } from "../../src/config/warnings.ts";
import { parseConfig } from "../../src/config/config.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

const DISCOVERY = "/0.1/oidc/.well-known/openid-configuration";
const at = (t: TestApp, url: string, init?: RequestInit) => t.http.request(new Request(url, init));

describeEachDb(
  "without public_url: only the listener's own names",
  (get) => {
    test("another Host gets 421 on discovery (JSON), the login page and the console (pages); no issuer names it", async () => {
      const t = get();
      const discovery = await at(t, `http://evil.example${DISCOVERY}`);
      expect(discovery.status).toBe(421);
      const body = await discovery.json();
      expect(body).toMatchObject({ error_id: "misdirected-request", resource: "oidc" });
      expect(body.message).toContain("public_url");
      expect(JSON.stringify(body)).not.toContain("evil.example/0.1/oidc");
      for (const path of [
        "/0.1/oidc/authorize?client_id=x",
        "/0.1/oidc/account",
        "/0.1/oidc/logout",
        "/0.1/console/",
      ]) {
        const page = await at(t, `http://evil.example:666${path}`);
        expect([path, page.status]).toEqual([path, 421]);
        expect(page.headers.get("content-type")).toStartWith("text/html");
        expect(await page.text()).toContain("accepted_hosts");
      }
      const jwks = await at(t, "http://evil.example/0.1/oidc/jwks");
      expect(jwks.status).toBe(421);
    });

    test("loopback names, the listener's address and accepted_hosts are answered with their own issuer", async () => {
      const t = get();
      for (const base of [
        "http://localhost",
        "http://127.0.0.1:1234",
        "http://[::1]:9497",
        "http://auth.lan:8080",
        "https://sso.lan:8443",
        "http://192.0.2.10:9497",
      ]) {
        const r = await at(t, `${base}${DISCOVERY}`);
        expect([base, r.status]).toEqual([base, 200]);
        expect((await r.json()).issuer).toBe(`${base}/0.1/oidc`);
      }
      for (const base of ["https://sso.lan:9443", "http://192.0.2.10:666", "http://192.0.2.11:9497"])
        expect([base, (await at(t, `${base}${DISCOVERY}`)).status]).toEqual([base, 421]);
    });

    test("the wazo-auth REST API and the clients' administration answer through any host name", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const check = await at(t, `http://daemon-alias.example/0.1/token/${admin}`, { method: "HEAD" });
      expect(check.status).toBe(204);
      const clients = await at(t, "http://daemon-alias.example/0.1/oidc/clients", {
        headers: { "X-Auth-Token": admin },
      });
      expect(clients.status).toBe(200);
    });

    test("the introspection fast path does not answer for another host either", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "RS", client_type: "confidential", redirect_uris: ["https://rs.test/cb"] },
      });
      const basic = `Basic ${Buffer.from(`${client.json.client_id}:${client.json.client_secret}`).toString("base64")}`;
      const handler = createHandler(t.app, t.http);
      const peers = { requestIP: () => ({ address: "127.0.0.1", family: "IPv4", port: 1 }) };
      const introspect = (host: string) =>
        handler(
          new Request(`http://${host}/0.1/oidc/introspect`, {
            method: "POST",
            body: `token=${admin}`,
            headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: basic },
          }),
          peers as never,
        );
      expect((await introspect("localhost")).status).toBe(200);
      expect((await introspect("evil.example")).status).toBe(421);
    });
  },
  { config: { accepted_hosts: ["auth.lan", "sso.lan:8443"], rest_api: { listen: "192.0.2.10", port: 9497 } } },
);

describeEachDb(
  "with public_url: the issuer is the configured one whatever the Host",
  (get) => {
    test("discovery through any Host names public_url's issuer", async () => {
      const t = get();
      const r = await at(t, `http://evil.example${DISCOVERY}`);
      expect(r.status).toBe(200);
      expect((await r.json()).issuer).toBe("https://auth.strict.test/0.1/oidc");
    });
  },
  { config: { public_url: "https://auth.strict.test" } },
);

test("the start-up warning says how to set it", () => {
  const warnings = configWarnings(parseConfig({})).join("\n");
  expect(warnings).toContain("answer only for the listener's own address, loopback names");
  expect(warnings).toContain("accepted_hosts");
  expect(configWarnings(parseConfig({ public_url: "https://a.example" })).join("\n")).not.toContain("accepted_hosts");
});
