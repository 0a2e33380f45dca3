// POST /0.1/token with `idp_token`: a native application signs in at a tenant's upstream OpenID provider
// (panva's oidc-provider, child process) and hands its ID token to Tessera. Only a token signed by that
// provider, for its client, unexpired, for a linked user, once; another tenant's login never.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { passkeys, upstreamOidcLinks, users } from "../../src/db/schema.ts";
import { eq } from "drizzle-orm";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

const LOCAL = { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } };
const NATIVE_REDIRECT = "http://127.0.0.1:9/native-callback";

let upstream: UpstreamOidc;
beforeAll(async () => {
  upstream = await startUpstreamOidc({ accounts: { frank: { preferred_username: "frank" }, gina: {} } });
});
afterAll(() => upstream?.stop());

describeEachDb(
  "POST /0.1/token with an upstream ID token (idp_token)",
  (get) => {
    let client: { client_id: string; client_secret: string };
    let tenant: string;
    let other: string;
    let frank: string;

    beforeAll(async () => {
      const t = get();
      tenant = await createTenantRow(t.app);
      other = await createTenantRow(t.app);
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      client = await upstream.register([NATIVE_REDIRECT]);
      const made = await t.request("POST", "/0.1/backends/oidc", {
        token: admin,
        body: { name: "corp", display_name: "Corp", issuer: upstream.issuer, ...client, provisioning: "link" },
      });
      expect(made.status).toBe(201);
      frank = await createUserRow(t.app, { tenantUuid: tenant, username: "frank" });
      await t.app.db.update(users).set({ authenticationMethod: "oidc" }).where(eq(users.uuid, frank));
      await t.app.db
        .insert(upstreamOidcLinks)
        .values({ providerUuid: made.json.uuid, subject: "frank", userUuid: frank });
    });

    const tokenWith = async (account: string, tamper: null | "aud" | "signature" | "exp" = null) => {
      await upstream.set({ account, tamper });
      return upstream.idToken(client, NATIVE_REDIRECT);
    };

    test("GET /0.1/idp lists the oidc method", async () => {
      const r = await get().request("GET", "/0.1/idp", {
        token: (await tokenFor(get().app, { acl: ["auth.idp.read"] })).token,
      });
      expect(r.status).toBe(200);
      expect(JSON.stringify(r.json)).toContain('"oidc"');
    });

    test("the linked user is logged in, once: the same token again is refused", async () => {
      const t = get();
      const idToken = await tokenWith("frank");
      const r = await t.request("POST", "/0.1/token", { body: { idp_token: idToken } });
      expect(r.status).toBe(200);
      expect(r.json.data.auth_id).toBe(frank);
      expect(r.json.data.metadata.tenant_uuid).toBe(tenant);
      const again = await t.request("POST", "/0.1/token", { body: { idp_token: idToken } });
      expect(again.status).toBe(401);
    });

    test("a user who must change the password gets its whole token: no password was typed here", async () => {
      const t = get();
      const before = await t.request("POST", "/0.1/token", { body: { idp_token: await tokenWith("frank") } });
      expect(before.status).toBe(200);
      await t.app.db.update(users).set({ passwordChangeRequired: true }).where(eq(users.uuid, frank));
      try {
        const r = await t.request("POST", "/0.1/token", { body: { idp_token: await tokenWith("frank") } });
        expect(r.status).toBe(200);
        expect(r.json.data.acl).toEqual(before.json.data.acl);
        expect(JSON.stringify(r.json.data.acl)).not.toContain("password");
      } finally {
        await t.app.db.update(users).set({ passwordChangeRequired: false }).where(eq(users.uuid, frank));
      }
    });

    for (const tamper of ["aud", "signature", "exp"] as const) {
      test(`an ID token with a wrong ${tamper} is refused`, async () => {
        const r = await get().request("POST", "/0.1/token", { body: { idp_token: await tokenWith("frank", tamper) } });
        expect(r.status).toBe(401);
      });
    }

    test("links: listed by the user and its administrators, hidden from another tenant, removed by the user", async () => {
      const t = get();
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const stranger = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: other })).token;
      const own = (await tokenFor(t.app, { acl: ["auth.users.me.oidc_links.#"], userUuid: frank, tenantUuid: tenant }))
        .token;
      const byAdmin = await t.request("GET", `/0.1/users/${frank}/oidc_links`, { token: admin });
      expect(byAdmin.status).toBe(200);
      expect(byAdmin.json.total).toBe(1);
      expect(byAdmin.json.items[0]).toMatchObject({ name: "corp", display_name: "Corp", subject: "frank" });
      const providerUuid = byAdmin.json.items[0].oidc_backend_uuid;
      expect((await t.request("GET", `/0.1/users/${frank}/oidc_links`, { token: stranger })).status).toBe(404);
      expect(
        (await t.request("DELETE", `/0.1/users/${frank}/oidc_links/${providerUuid}`, { token: stranger })).status,
      ).toBe(204);
      const mine = await t.request("GET", "/0.1/users/me/oidc_links", { token: own });
      expect(mine.json.items.map((l: { subject: string }) => l.subject)).toEqual(["frank"]);
      // frank signs in only through this link (method oidc, no passkey): the user may not remove it…
      const last = await t.request("DELETE", `/0.1/users/me/oidc_links/${providerUuid}`, { token: own });
      expect(last.status).toBe(409);
      expect(last.json).toMatchObject({
        error_id: "conflict",
        resource: "oidc_links",
        message: "Corp is the only way this user can sign in",
        details: { oidc_backend_uuid: { constraint_id: "last_sign_in" } },
      });
      // …nor through its own uuid…
      expect((await t.request("DELETE", `/0.1/users/${frank}/oidc_links/${providerUuid}`, { token: own })).status).toBe(
        409,
      );
      expect((await t.request("GET", "/0.1/users/me/oidc_links", { token: own })).json.total).toBe(1);
      // …once it has a passkey, it may.
      await t.app.db.insert(passkeys).values({
        credentialId: "cred-frank",
        uuid: crypto.randomUUID(),
        userUuid: frank,
        name: "key",
        publicKey: "pk",
        backupEligible: false,
        backedUp: false,
      });
      expect((await t.request("DELETE", `/0.1/users/me/oidc_links/${providerUuid}`, { token: own })).status).toBe(204);
      expect((await t.request("GET", "/0.1/users/me/oidc_links", { token: own })).json.total).toBe(0);
      await t.app.db.delete(passkeys).where(eq(passkeys.userUuid, frank));
      // An administrator may remove another user's last way in (it can give that user a password).
      await t.app.db.insert(upstreamOidcLinks).values({ providerUuid, subject: "frank", userUuid: frank });
      expect(
        (await t.request("DELETE", `/0.1/users/${frank}/oidc_links/${providerUuid}`, { token: admin })).status,
      ).toBe(204);
      expect((await t.request("GET", "/0.1/users/me/oidc_links", { token: own })).json.total).toBe(0);
      // Unlinked: the upstream identity logs nobody in any more.
      expect((await t.request("POST", "/0.1/token", { body: { idp_token: await tokenWith("frank") } })).status).toBe(
        401,
      );
      await t.app.db.insert(upstreamOidcLinks).values({ providerUuid, subject: "frank", userUuid: frank });
    });

    test("a native application's own client id counts once it is listed in native_client_ids", async () => {
      const t = get();
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const mobile = await upstream.register([NATIVE_REDIRECT]);
      await upstream.set({ account: "frank", tamper: null });
      const before = await t.request("POST", "/0.1/token", {
        body: { idp_token: await upstream.idToken(mobile, NATIVE_REDIRECT) },
      });
      expect(before.status).toBe(401);
      const list = await t.request("GET", "/0.1/backends/oidc", { token: admin });
      const current = list.json.items[0];
      const put = await t.request("PUT", `/0.1/backends/oidc/${current.uuid}`, {
        token: admin,
        body: {
          name: current.name,
          display_name: current.display_name,
          issuer: current.issuer,
          client_id: current.client_id,
          provisioning: current.provisioning,
          native_client_ids: [mobile.client_id],
        },
      });
      expect(put.status).toBe(204);
      expect(
        (await t.request("GET", `/0.1/backends/oidc/${current.uuid}`, { token: admin })).json.native_client_ids,
      ).toEqual([mobile.client_id]);
      const after = await t.request("POST", "/0.1/token", {
        body: { idp_token: await upstream.idToken(mobile, NATIVE_REDIRECT) },
      });
      expect(after.status).toBe(200);
      expect(after.json.data.auth_id).toBe(frank);
    });

    test("an upstream identity linked to nobody, garbage, or another tenant named: 401", async () => {
      const t = get();
      expect((await t.request("POST", "/0.1/token", { body: { idp_token: await tokenWith("gina") } })).status).toBe(
        401,
      );
      expect((await t.request("POST", "/0.1/token", { body: { idp_token: "not.a.jwt" } })).status).toBe(401);
      const named = await t.request("POST", "/0.1/token", {
        body: { idp_token: await tokenWith("frank"), tenant_id: other },
      });
      expect(named.status).toBe(401);
    });
  },
  { config: LOCAL },
);
