// The cleanup job (boot/jobs.ts runCleanup) purges what can be used no more: initial access tokens
// expired or used up (RFC 7591 §3), and pushed authorization requests past their lifetime (RFC 9126
// §2.2), opened or not — while live ones stay usable.
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { runCleanup } from "../../src/boot/jobs.ts";
import { oidcInitialAccessTokens, oidcPushedRequests } from "../../src/db/schema.ts";
import { storePushedRequest } from "../../src/services/oidc/pushed-requests.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

describeEachDb("cleanup of spent initial access tokens and expired pushed requests", (get) => {
  test("expired or used-up initial access tokens go; a live one stays and still registers", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const issue = async (body: Record<string, unknown>) => {
      const r = await t.request("POST", "/0.1/oidc/initial-access-tokens", { token: admin, body });
      expect(r.status).toBe(201);
      return r.json as { uuid: string; token: string };
    };
    const expired = await issue({});
    const usedUp = await issue({ max_uses: 1 });
    const live = await issue({ max_uses: 2 });
    await t.app.db
      .update(oidcInitialAccessTokens)
      .set({ expiresAt: new Date(Date.now() - 1_000) })
      .where(eq(oidcInitialAccessTokens.uuid, expired.uuid));
    // Used up through the registration endpoint, as a client spends it.
    const registered = await t.request("POST", "/0.1/oidc/register", {
      headers: { Authorization: `Bearer ${usedUp.token}` },
      body: { redirect_uris: ["https://rp.example.com/cb"], client_name: "rp" },
    });
    expect(registered.status).toBe(201);
    const { oidcRequests } = await runCleanup(t.app);
    expect(oidcRequests).toBeGreaterThanOrEqual(2);
    const left = await t.request("GET", "/0.1/oidc/initial-access-tokens", { token: admin });
    expect(left.status).toBe(200);
    expect(left.json.items.map((i: { uuid: string }) => i.uuid)).toEqual([live.uuid]);
    // The client registered with the purged token keeps its registration.
    const client = await t.request("GET", `/0.1/oidc/clients/${registered.json.client_id}`, { token: admin });
    expect(client.status).toBe(200);
    const again = await t.request("POST", "/0.1/oidc/register", {
      headers: { Authorization: `Bearer ${live.token}` },
      body: { redirect_uris: ["https://rp.example.com/cb"], client_name: "rp2" },
    });
    expect(again.status).toBe(201);
  });

  test("pushed requests past their lifetime go, opened or not; a fresh one stays", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    const c = await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: "rp", client_type: "confidential", redirect_uris: ["https://rp.example.com/cb"] },
    });
    expect(c.status).toBe(201);
    const clientId = c.json.client_id as string;
    const params = { client_id: clientId, response_type: "code", scope: "openid" };
    const stale = await storePushedRequest(t.app, clientId, params);
    const staleOpened = await storePushedRequest(t.app, clientId, params);
    const fresh = await storePushedRequest(t.app, clientId, params);
    const { createHash } = await import("node:crypto");
    const hash = (uri: string) => createHash("sha256").update(uri).digest("hex");
    for (const [r, opened] of [
      [stale, false],
      [staleOpened, true],
    ] as const)
      await t.app.db
        .update(oidcPushedRequests)
        .set({ expiresAt: new Date(Date.now() - 1_000), opened })
        .where(eq(oidcPushedRequests.uriHash, hash(r.request_uri)));
    const { oidcRequests } = await runCleanup(t.app);
    expect(oidcRequests).toBeGreaterThanOrEqual(2);
    const rows = await t.app.db
      .select({ uriHash: oidcPushedRequests.uriHash })
      .from(oidcPushedRequests)
      .where(eq(oidcPushedRequests.clientId, clientId));
    expect(rows.map((r) => r.uriHash)).toEqual([hash(fresh.request_uri)]);
  });
});
