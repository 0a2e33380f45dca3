// Without public_url, the issuer's path prefix comes from X-Script-Name — believed only from a peer
// in rest_api.trusted_proxies, like X-Forwarded-For (docs/security.md, "Client address"). Any other
// peer's header is ignored by the three readers: discovery's issuer, the OpenAPI document's server
// and the introspection answer's `iss` (the fast path before the router included).
import { beforeAll, expect, test } from "bun:test";
import { parse } from "yaml";
import { parseConfig } from "../../src/config/config.ts";
import { configWarnings } from "../../src/config/warnings.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";

const PROXY = "10.20.30.40";
const STRANGER = "192.0.2.7";
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;

describeEachDb(
  "X-Script-Name from an untrusted peer is ignored",
  (get) => {
    let admin = "";
    let client: { client_id: string; client_secret: string };
    beforeAll(async () => {
      const t = get();
      admin = (await tokenFor(t.app, { acl: ["#"] })).token;
      client = (
        await t.request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: { name: "rs", client_type: "confidential", redirect_uris: ["https://rs.test/cb"], first_party: true },
        })
      ).json;
    });

    const discovery = (remoteAddr: string) =>
      get().request("GET", "/0.1/oidc/.well-known/openid-configuration", {
        headers: { "X-Script-Name": "/evil" },
        remoteAddr,
      });
    const openapi = async (remoteAddr: string) =>
      parse(
        (await get().request("GET", "/0.1/api/api.yml", { headers: { "X-Script-Name": "/evil" }, remoteAddr })).text,
      );
    const introspect = (remoteAddr: string) =>
      get().request("POST", "/0.1/oidc/introspect", {
        rawBody: `token=${admin}`,
        headers: {
          Authorization: basic(client.client_id, client.client_secret),
          "Content-Type": "application/x-www-form-urlencoded",
          "X-Script-Name": "/evil",
        },
        remoteAddr,
      });

    test("discovery's issuer", async () => {
      for (const peer of [STRANGER, "127.0.0.1"])
        expect((await discovery(peer)).json.issuer).toBe("http://localhost/0.1/oidc");
      expect((await discovery(PROXY)).json.issuer).toBe("http://localhost/evil/0.1/oidc");
    });

    test("the OpenAPI document's server", async () => {
      expect((await openapi(STRANGER)).servers).toEqual([{ url: "/0.1" }]);
      expect((await openapi(PROXY)).servers).toEqual([{ url: "/evil/0.1" }]);
    });

    test("introspection's iss (twice: the cached answer too)", async () => {
      for (let i = 0; i < 2; i++) {
        const r = await introspect(STRANGER);
        expect(r.status).toBe(200);
        expect(r.json.active).toBe(true);
        expect(r.json.iss).toBe("http://localhost/0.1/oidc");
      }
      expect((await introspect(PROXY)).json.iss).toBe("http://localhost/evil/0.1/oidc");
      expect((await introspect(STRANGER)).json.iss).toBe("http://localhost/0.1/oidc");
    });
  },
  { config: { rest_api: { trusted_proxies: [PROXY] } } },
);

test("the start-up warning without public_url nor trusted proxies names nginx on localhost's setting", () => {
  const warned = configWarnings(parseConfig({})).join("\n");
  expect(warned).toContain("X-Script-Name");
  expect(warned).toContain('rest_api.trusted_proxies: ["127.0.0.1", "::1"]');
  for (const config of [{ rest_api: { trusted_proxies: ["127.0.0.1"] } }, { public_url: "https://a.example/api/auth" }])
    expect(configWarnings(parseConfig(config)).join("\n")).not.toContain("X-Script-Name");
});
