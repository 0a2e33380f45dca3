// A database outage at the endpoints of issue 42 (private PostgreSQL cluster, stopped by the test):
// dynamic client registration, pushed authorization requests, token exchange and the resource
// servers' API each answer 503 in their door's error form — `temporarily_unavailable` (RFC 6749
// §5.2, RFC 7591 §3.2.2) on the OAuth endpoints, `service-unavailable` on the REST API — never a 500.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { type ServedApp, startClusterApp, stopClusterApp } from "../helpers/oidc.ts";
import { pgClusterAvailable, type PgCluster } from "../helpers/pg-cluster.ts";

const REDIRECT = "https://rp.example.com/cb";
const EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS = "urn:ietf:params:oauth:token-type:access_token";

describe.skipIf(!pgClusterAvailable)("issue 42's endpoints during a database outage", () => {
  let cluster: PgCluster;
  let t: TestApp;
  let served: ServedApp;

  beforeAll(async () => {
    ({ cluster, t, served } = await startClusterApp());
  }, 120_000);
  afterAll(() => stopClusterApp({ cluster, t, served }), 60_000);

  test("registration, PAR, token exchange and /0.1/oidc/resources: 503 in their door's form", async () => {
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#"], tenantUuid: tenant })).token;
    await createUserRow(t.app, { tenantUuid: tenant, username: "dora", password: "dora-secret" });
    const register = async (body: Record<string, unknown>) => {
      const r = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
      });
      expect(r.status).toBe(201);
      return r.json as { client_id: string; client_secret: string };
    };
    const web = await register({});
    const gateway = await register({ redirect_uris: [], grant_types: [EXCHANGE], scopes: ["openid"] });
    const iat = await t.request("POST", "/0.1/oidc/initial-access-tokens", { token: admin, body: {} });
    expect(iat.status).toBe(201);
    const resource = await t.request("POST", "/0.1/oidc/resources", {
      token: admin,
      body: { identifier: "https://calld.example.com", acl: ["calld.#"], token_format: "jwt" },
    });
    expect(resource.status).toBe(201);
    const login = await fetch(`${served.url}/0.1/token`, {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("dora:dora-secret")}`, "Content-Type": "application/json" },
      body: "{}",
    });
    const subject = ((await login.json()) as { data: { token: string } }).data.token;
    const issuer = `${served.url}/0.1/oidc`;

    await cluster.stop();
    const form = (client: { client_id: string; client_secret: string }, fields: Record<string, string>) => ({
      method: "POST",
      body: new URLSearchParams({ client_id: client.client_id, client_secret: client.client_secret, ...fields }),
    });
    const oauthAnswers = [
      await fetch(`${issuer}/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${iat.json.token}` },
        body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: "self" }),
      }),
      await fetch(
        `${issuer}/par`,
        form(web, { response_type: "code", scope: "openid", redirect_uri: REDIRECT, code_challenge_method: "S256" }),
      ),
      await fetch(
        `${issuer}/token`,
        form(gateway, { grant_type: EXCHANGE, subject_token: subject, subject_token_type: ACCESS }),
      ),
    ];
    for (const r of oauthAnswers) {
      expect(r.status).toBe(503);
      expect(r.headers.get("content-type")).toContain("application/json");
      expect(await r.json()).toMatchObject({ error: "temporarily_unavailable" });
    }
    for (const [method, path, body] of [
      ["GET", "/0.1/oidc/resources", undefined],
      ["GET", `/0.1/oidc/resources/${resource.json.uuid}`, undefined],
      ["POST", "/0.1/oidc/resources", { identifier: "https://x.example.com", acl: [], token_format: "opaque" }],
      ["DELETE", `/0.1/oidc/resources/${resource.json.uuid}`, undefined],
    ] as const) {
      const r = await t.request(method, path, { token: admin, body });
      expect([method, path, r.status, r.json?.error_id]).toEqual([method, path, 503, "service-unavailable"]);
    }
  }, 90_000);
});
