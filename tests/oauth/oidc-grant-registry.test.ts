// The grants of the token endpoint are one registry (src/services/oidc/grants/index.ts): the token
// endpoint dispatches through it (a grant's handler sees only the parameters it declares), the
// clients' registration accepts exactly its grant types, and discovery announces them.
import { afterEach, expect, test } from "bun:test";
import { GRANT_TYPES, GRANTS, grantOf, type Grant } from "../../src/services/oidc/grants/index.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";

const REDIRECT = "https://rp.example.com/callback";

test("the registry: one entry per grant type, each with its parameters", () => {
  expect(new Set(GRANT_TYPES).size).toBe(GRANTS.length);
  for (const g of GRANTS) {
    expect(grantOf(g.type)).toBe(g);
    expect(g.parameters.length).toBeGreaterThan(0);
  }
  expect(grantOf("password")).toBeUndefined(); // RFC 9700 §2.4
  expect(grantOf("implicit")).toBeUndefined(); // RFC 9700 §2.1.2
});

describeEachDb("the grant registry", (get) => {
  const saved = new Map<Grant, Grant["handle"]>();
  afterEach(() => {
    for (const [g, handle] of saved) g.handle = handle;
    saved.clear();
  });

  const register = async (grantTypes: string[]) =>
    get().request("POST", "/0.1/oidc/clients", {
      token: await adminToken(get().app),
      body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], grant_types: grantTypes },
    });

  const token = (form: Record<string, string>) =>
    get().request("POST", "/0.1/oidc/token", {
      rawBody: new URLSearchParams(form).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });

  test("discovery announces the registry's grants, in its order", async () => {
    const r = await get().request("GET", "/0.1/oidc/.well-known/openid-configuration");
    expect(r.json.grant_types_supported).toEqual([...GRANT_TYPES]);
  });

  test("a client registers any of the registry's grants, and none other", async () => {
    const r = await register([...GRANT_TYPES]);
    expect(r.status).toBe(201);
    expect(r.json.grant_types).toEqual([...GRANT_TYPES]);
    expect((await register(["password"])).status).toBe(400);
  });

  test("the token endpoint refuses a grant type outside the registry, naming the registry's", async () => {
    const client = (await register(["client_credentials"])).json;
    const r = await token({ grant_type: "password", client_id: client.client_id, client_secret: client.client_secret });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      error: "unsupported_grant_type",
      error_description: `supported: ${GRANT_TYPES.join(", ")}`,
    });
  });

  test("the token endpoint runs the registry's handler with only the grant's declared parameters", async () => {
    const client = (await register(["authorization_code", "client_credentials"])).json;
    for (const grant of GRANTS.filter((g) => g.type === "client_credentials" || g.type === "authorization_code")) {
      const seen: Record<string, string | undefined>[] = [];
      saved.set(grant, grant.handle);
      grant.handle = async (_app, c, form) => {
        expect(c.clientId).toBe(client.client_id);
        seen.push(form);
        return { access_token: "a", token_type: "Bearer", expires_in: 1, scope: "" };
      };
      const declared = Object.fromEntries(grant.parameters.map((p) => [p, `v-${p}`]));
      const r = await token({
        grant_type: grant.type,
        client_id: client.client_id,
        client_secret: client.client_secret,
        ...declared,
        not_declared: "x",
        device_code: grant.parameters.includes("device_code") ? "v-device_code" : "stray",
      });
      expect(r.status).toBe(200);
      expect(r.json.access_token).toBe("a");
      expect(seen).toEqual([declared]);
    }
  });
});
