// OpenID Connect clients: the registration contract, validation, tenant isolation, events.
import { beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { oidcClients } from "../../src/db/schema.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { hashClientSecret } from "../../src/services/oidc/clients.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tenantFamily, tokenFor } from "../helpers/fixtures.ts";

const WEB = {
  name: "grafana",
  client_type: "confidential",
  redirect_uris: ["https://grafana.example.com/login/generic_oauth"],
  post_logout_redirect_uris: ["https://grafana.example.com/login"],
  first_party: true,
};
const MOBILE = {
  name: "phone app",
  client_type: "public",
  redirect_uris: ["com.example.phone:/callback", "http://127.0.0.1:8123/cb"],
  post_logout_redirect_uris: [],
  first_party: false,
};

describeEachDb("OpenID Connect clients", (get) => {
  let family: Awaited<ReturnType<typeof tenantFamily>>;
  beforeAll(async () => {
    family = await tenantFamily(get().app);
  });

  test("registration contract: 201 with client_id and, for a confidential client, a secret shown once and stored hashed", async () => {
    const t = get();
    const r = await t.request("POST", "/0.1/oidc/clients", { token: family.admin, body: WEB });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      name: "grafana",
      client_type: "confidential",
      tenant_uuid: family.tenant,
      redirect_uris: WEB.redirect_uris,
      post_logout_redirect_uris: WEB.post_logout_redirect_uris,
      first_party: true,
      pkce_required: false,
    });
    expect(r.json.grant_types).toEqual(["authorization_code", "refresh_token"]);
    expect(r.json.token_endpoint_auth_methods).toEqual(["client_secret_basic", "client_secret_post"]);
    expect(r.json.id_token_signed_response_alg).toBe("ES256");
    expect(r.json.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const [row] = await t.app.db.select().from(oidcClients).where(eq(oidcClients.clientId, r.json.client_id));
    expect(row!.secretHash).toBe(hashClientSecret(r.json.client_secret));
    expect(row!.secretHash).not.toContain(r.json.client_secret);
    // Never again: not on read, not in the list, not in the event.
    const read = await t.request("GET", `/0.1/oidc/clients/${r.json.client_id}`, { token: family.admin });
    expect(read.status).toBe(200);
    expect(read.text).not.toContain(r.json.client_secret);
    expect(read.text).not.toContain(row!.secretHash!);
    expect(read.json).not.toHaveProperty("client_secret");
    const list = await t.request("GET", "/0.1/oidc/clients", { token: family.admin });
    expect(list.json.items.map((c: { client_id: string }) => c.client_id)).toContain(r.json.client_id);
    expect(list.text).not.toContain(r.json.client_secret);
    const events = (await listRecordedEvents(t.app.db)).filter(
      (e) => e.name === "auth_oidc_client_created" && e.payload.data.client_id === r.json.client_id,
    );
    expect(events.length).toBe(1);
    expect(events[0]!.routingKey).toBe(`auth.oidc.clients.${r.json.client_id}.created`);
    expect(events[0]!.headers.tenant_uuid).toBe(family.tenant);
    expect(JSON.stringify(events[0]!.payload)).not.toContain(row!.secretHash!);
  });

  test("a public client has no secret and must use PKCE; RS256 on request; update keeps type and secret; delete", async () => {
    const t = get();
    const r = await t.request("POST", "/0.1/oidc/clients", {
      token: family.admin,
      body: { ...MOBILE, id_token_signed_response_alg: "RS256", scopes: ["openid", "auth.users.me.read"] },
    });
    expect(r.status).toBe(201);
    expect(r.json).not.toHaveProperty("client_secret");
    expect(r.json).toMatchObject({
      pkce_required: true,
      token_endpoint_auth_methods: ["none"],
      id_token_signed_response_alg: "RS256",
      scopes: ["openid", "auth.users.me.read"],
    });
    const id = r.json.client_id;
    const put = await t.request("PUT", `/0.1/oidc/clients/${id}`, {
      token: family.admin,
      body: { ...MOBILE, name: "renamed", client_type: "confidential", id_token_lifetime: 600 },
    });
    expect(put.status).toBe(204);
    expect((await t.request("GET", `/0.1/oidc/clients/${id}`, { token: family.admin })).json).toMatchObject({
      name: "renamed",
      client_type: "public",
      id_token_lifetime: 600,
      id_token_signed_response_alg: "RS256",
    });
    const [row] = await t.app.db.select().from(oidcClients).where(eq(oidcClients.clientId, id));
    expect(row!.secretHash).toBeNull();
    expect((await t.request("DELETE", `/0.1/oidc/clients/${id}`, { token: family.admin })).status).toBe(204);
    expect((await t.request("GET", `/0.1/oidc/clients/${id}`, { token: family.admin })).status).toBe(404);
    expect((await t.request("DELETE", `/0.1/oidc/clients/${id}`, { token: family.admin })).status).toBe(204);
    const names = (await listRecordedEvents(t.app.db))
      .filter((e) => e.payload.data.client_id === id)
      .map((e) => e.name);
    expect(names).toEqual(["auth_oidc_client_created", "auth_oidc_client_updated", "auth_oidc_client_deleted"]);
  });

  test("bad input: 400 with details, never a write", async () => {
    const t = get();
    const before = (await t.app.db.select().from(oidcClients)).length;
    const bad: Array<[unknown, string]> = [
      [{ ...WEB, redirect_uris: ["https://app.example.com/cb#frag"] }, "redirect_uris"],
      [{ ...WEB, redirect_uris: ["javascript:alert(1)"] }, "redirect_uris"],
      [{ ...WEB, redirect_uris: ["/relative"] }, "redirect_uris"],
      [{ ...WEB, redirect_uris: [] }, "redirect_uris"],
      [{ ...WEB, client_type: "both" }, "client_type"],
      [{ ...WEB, grant_types: ["implicit"] }, "grant_types"],
      [{ ...WEB, grant_types: ["password"] }, "grant_types"],
      [{ ...WEB, grant_types: ["refresh_token"] }, "grant_types"],
      [{ ...MOBILE, grant_types: ["client_credentials"] }, "grant_types"],
      [{ ...WEB, scopes: ["has space"] }, "scopes"],
      [{ ...WEB, id_token_signed_response_alg: "none" }, "id_token_signed_response_alg"],
      [{ ...WEB, id_token_signed_response_alg: "HS256" }, "id_token_signed_response_alg"],
      [{ ...WEB, id_token_lifetime: 86_401 }, "id_token_lifetime"],
      [{ ...WEB, name: "" }, "name"],
      [{ ...WEB, name: "a\u0000b" }, "name"],
    ];
    for (const [body, field] of bad) {
      const r = await t.request("POST", "/0.1/oidc/clients", { token: family.admin, body });
      expect(r.status).toBe(400);
      expect(r.json.error_id).toBe("invalid-data");
      expect(r.json.details).toHaveProperty(field);
    }
    // client credentials alone need no redirect URI
    const cc = await t.request("POST", "/0.1/oidc/clients", {
      token: family.admin,
      body: { name: "svc", client_type: "confidential", grant_types: ["client_credentials"] },
    });
    expect(cc.status).toBe(201);
    expect((await t.app.db.select().from(oidcClients)).length).toBe(before + 1);
    expect((await t.request("GET", "/0.1/oidc/clients/not-a-uuid", { token: family.admin })).status).toBe(404);
    expect((await t.request("GET", "/0.1/oidc/clients?order=secret_hash", { token: family.admin })).status).toBe(400);
  });

  test("isolation: a sibling or a child sees and changes nothing; a parent acts in a child with Wazo-Tenant", async () => {
    const t = get();
    const mine = (await t.request("POST", "/0.1/oidc/clients", { token: family.admin, body: WEB })).json.client_id;
    for (const other of [family.siblingAdmin, family.childAdmin]) {
      expect((await t.request("GET", `/0.1/oidc/clients/${mine}`, { token: other })).status).toBe(404);
      expect(
        (
          await t.request("PUT", `/0.1/oidc/clients/${mine}`, {
            token: other,
            body: { ...WEB, redirect_uris: ["https://evil.example.com/cb"] },
          })
        ).status,
      ).toBe(404);
      expect((await t.request("DELETE", `/0.1/oidc/clients/${mine}`, { token: other })).status).toBe(204);
      const list = await t.request("GET", "/0.1/oidc/clients?recurse=true", { token: other });
      expect(list.json.items.map((c: { client_id: string }) => c.client_id)).not.toContain(mine);
      // Naming the victim tenant is refused outright.
      expect((await t.request("GET", "/0.1/oidc/clients", { token: other, tenant: family.tenant })).status).toBe(401);
    }
    const [row] = await t.app.db.select().from(oidcClients).where(eq(oidcClients.clientId, mine));
    expect(row!.redirectUris).toEqual(WEB.redirect_uris);
    // The parent creates in its child and sees it with recurse.
    const inChild = await t.request("POST", "/0.1/oidc/clients", {
      token: family.admin,
      tenant: family.child,
      body: MOBILE,
    });
    expect(inChild.json.tenant_uuid).toBe(family.child);
    const own = await t.request("GET", "/0.1/oidc/clients", { token: family.admin });
    expect(own.json.items.map((c: { client_id: string }) => c.client_id)).not.toContain(inChild.json.client_id);
    const all = await t.request("GET", "/0.1/oidc/clients?recurse=true", { token: family.admin });
    expect(all.json.items.map((c: { client_id: string }) => c.client_id)).toContain(inChild.json.client_id);
    expect(
      (await t.request("GET", `/0.1/oidc/clients/${inChild.json.client_id}`, { token: family.childAdmin })).status,
    ).toBe(200);
  });

  test("ACLs: auth.oidc.clients.* is required, per action and per client", async () => {
    const t = get();
    const id = (await t.request("POST", "/0.1/oidc/clients", { token: family.admin, body: WEB })).json.client_id;
    const reader = (await tokenFor(t.app, { acl: [`auth.oidc.clients.${id}.read`], tenantUuid: family.tenant })).token;
    expect((await t.request("GET", `/0.1/oidc/clients/${id}`, { token: reader })).status).toBe(200);
    expect((await t.request("GET", "/0.1/oidc/clients", { token: reader })).status).toBe(403);
    expect((await t.request("POST", "/0.1/oidc/clients", { token: reader, body: WEB })).status).toBe(403);
    expect((await t.request("PUT", `/0.1/oidc/clients/${id}`, { token: reader, body: WEB })).status).toBe(403);
    expect((await t.request("DELETE", `/0.1/oidc/clients/${id}`, { token: reader })).status).toBe(403);
    expect((await t.request("GET", `/0.1/oidc/clients/${id}`)).status).toBe(401);
  });
});
