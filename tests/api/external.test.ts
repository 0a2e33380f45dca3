// External authentication: the framework, the stock plugins (mobile, google, microsoft against a
// real OAuth2 server) and a third-party plugin loaded from outside src/ and plugins/.
import { afterAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { userExternalAuths } from "../../src/db/schema.ts";
import { listRecordedEvents } from "../../src/services/events.ts";
import { buildOAuth2RedirectUrl } from "../../src/services/integrations/oauth2.ts";
import { parseConfig } from "../../src/config/config.ts";
import type { AppContext } from "../../src/boot/context.ts";
import { createTestApp, describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { startOAuth2Server } from "../helpers/oauth2-server.ts";

const oauth = await startOAuth2Server();
afterAll(() => oauth.close());

const config = {
  plugins: {
    external_auth: {
      mobile: "./plugins/external-auth/mobile.ts",
      google: "./plugins/external-auth/google.ts",
      microsoft: "./plugins/external-auth/microsoft.ts",
      notes: "./tests/fixtures/external-auth/notes.ts",
      broken: "./tests/fixtures/external-auth/broken-load.ts",
      incomplete: "./tests/fixtures/plugins/broken-idp.ts",
    },
  },
  google: { authorization_base_url: `${oauth.url}/authorize`, token_url: `${oauth.url}/token` },
  microsoft: { authorization_base_url: `${oauth.url}/authorize`, token_url: `${oauth.url}/token` },
};

describeEachDb(
  "external auth",
  (get) => {
    async function setup() {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const user = await createUserRow(t.app, { tenantUuid: tenant });
      const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      return { t, tenant, user, admin };
    }

    test("plugins that fail to load are reported by name in /status; the others work", async () => {
      const { t, admin } = await setup();
      const master = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      const s = (await t.request("GET", "/0.1/status", { token: master })).json;
      expect(s.plugins.broken).toMatchObject({ status: "fail", kind: "external_auth" });
      expect(s.plugins.broken.error).toContain("cannot be imported");
      expect(s.plugins.incomplete.error).toContain("routes");
      expect(s.plugins.mobile.status).toBe("ok");
      expect((await t.request("GET", "/0.1/backends")).json).toEqual({ data: ["wazo_user", "ldap_user"] });
      expect(admin).toBeTruthy();
    });

    test("mobile: create, conflict, upsert, read, sender id, delete; events", async () => {
      const { t, user, admin } = await setup();
      const path = `/0.1/users/${user}/external/mobile`;
      let r = await t.request("POST", path, { token: admin, body: { token: "fcm-1", apns_voip_token: "v" } });
      expect([r.status, r.json]).toEqual([
        201,
        {
          token: "fcm-1",
          apns_token: null,
          apns_voip_token: "v",
          apns_notification_token: null,
          apns_call_topic: null,
          apns_default_topic: null,
        },
      ]);
      r = await t.request("POST", path, { token: admin, body: { token: "fcm-2" } });
      expect([r.status, r.json.error_id]).toEqual([409, "conflict"]);
      r = await t.request("POST", path, { token: admin, body: { token: "x".repeat(513) } });
      expect([r.status, r.json.details.token.constraint_id]).toEqual([400, "length"]);
      r = await t.request("PUT", path, { token: admin, body: { token: "fcm-3" } });
      expect([r.status, r.text]).toEqual([204, ""]); // D3 of docs/wazo-auth-differences.md
      expect((await t.request("GET", path, { token: admin })).json.token).toBe("fcm-3");
      r = await t.request("GET", `${path}/sender_id`, { token: admin });
      expect(r.status).toBe(404);
      expect(
        (await t.request("POST", "/0.1/external/mobile/config", { token: admin, body: { fcm_sender_id: "123" } }))
          .status,
      ).toBe(201);
      expect((await t.request("GET", `${path}/sender_id`, { token: admin })).json).toEqual({ sender_id: "123" });
      expect((await t.request("DELETE", path, { token: admin })).status).toBe(204);
      expect((await t.request("GET", path, { token: admin })).status).toBe(404);
      expect((await t.request("DELETE", path, { token: admin })).status).toBe(204); // D4 of docs/wazo-auth-differences.md: already absent
      const names = (await listRecordedEvents(t.app.db))
        .filter((e) => e.routingKey.startsWith(`auth.users.${user}.external.mobile`))
        .map((e) => e.name);
      expect(names).toEqual([
        "auth_user_external_auth_added",
        "auth_user_external_auth_updated",
        "auth_user_external_auth_deleted",
      ]);
    });

    test("google: authorization through the real OAuth2 server, token, refresh when expired", async () => {
      const { t, user, admin } = await setup();
      const path = `/0.1/users/${user}/external/google`;
      let r = await t.request("POST", path, { token: admin, body: {} });
      expect([r.status, r.json.resource]).toEqual([404, "google"]); // no tenant config yet
      await t.request("POST", "/0.1/external/google/config", {
        token: admin,
        body: { client_id: "cid", client_secret: "csecret" },
      });
      r = await t.request("POST", path, { token: admin, body: { scope: ["contacts"] } });
      expect(r.status).toBe(201);
      const authorizationUrl = new URL(r.json.authorization_url);
      expect(authorizationUrl.searchParams.get("access_type")).toBe("offline");
      expect(authorizationUrl.searchParams.get("state")).toBe(r.json.state);
      // the user's browser goes to the provider, which redirects back to Tessera
      const redirect = await fetch(authorizationUrl, { redirect: "manual" });
      const back = new URL(redirect.headers.get("Location")!);
      expect(back.pathname).toBe("/0.1/external/google/oauth2/callback");
      const cb = await t.request("GET", `${back.pathname}${back.search}`);
      expect(cb.status).toBe(200);
      expect((await t.request("GET", `${back.pathname}${back.search}`)).status).toBe(404); // state used once
      const first = await t.request("GET", path, { token: admin });
      expect(first.status).toBe(200);
      expect(first.json.scope).toEqual(["contacts"]);
      expect(typeof first.json.access_token).toBe("string");
      expect(first.json.refresh_token).toBeUndefined();
      const before = oauth.tokenRequests();
      expect((await t.request("GET", path, { token: admin })).json.access_token).toBe(first.json.access_token); // still valid: no refresh
      await t.app.db
        .update(userExternalAuths)
        .set({
          data: JSON.stringify({
            ...JSON.parse(
              (await t.app.db.select().from(userExternalAuths).where(eq(userExternalAuths.userUuid, user)))[0]!.data!,
            ),
            token_expiration: 1,
          }),
        })
        .where(eq(userExternalAuths.userUuid, user));
      await Bun.sleep(1100); // tokens are JWTs with second resolution
      const refreshed = await t.request("GET", path, { token: admin });
      expect(refreshed.status).toBe(200);
      expect(oauth.tokenRequests()).toBe(before + 1);
      expect(refreshed.json.access_token).not.toBe(first.json.access_token);
      expect(refreshed.json.token_expiration).toBeGreaterThan(Date.now() / 1000);
      const authorized = (await listRecordedEvents(t.app.db)).filter(
        (e) => e.name === "auth_user_external_auth_authorized",
      );
      expect(authorized.at(-1)?.routingKey).toBe(`auth.users.${user}.external.google.authorized`);
      expect((await t.request("DELETE", path, { token: admin })).status).toBe(204);
    });

    test("microsoft: the same flow", async () => {
      const { t, user, admin } = await setup();
      await t.request("POST", "/0.1/external/microsoft/config", {
        token: admin,
        body: { client_id: "m", client_secret: "s" },
      });
      const r = await t.request("POST", `/0.1/users/${user}/external/microsoft`, { token: admin, body: {} });
      expect(new URL(r.json.authorization_url).searchParams.get("scope")).toBe("offline_access Contacts.Read");
      const back = new URL((await fetch(r.json.authorization_url, { redirect: "manual" })).headers.get("Location")!);
      expect((await t.request("GET", `${back.pathname}${back.search}`)).status).toBe(200);
      expect((await t.request("GET", `/0.1/users/${user}/external/microsoft`, { token: admin })).json.scope).toEqual([
        "offline_access",
        "Contacts.Read",
      ]);
    });

    test("a third-party plugin: routes, safe view, plugin_info; a throwing handler is a bare 500", async () => {
      const { t, user, admin } = await setup();
      expect(
        (
          await t.request("POST", `/0.1/users/${user}/external/notes`, {
            token: admin,
            body: { note: "hello", secret: "s3cr3t" },
          })
        ).status,
      ).toBe(201);
      const list = await t.request("GET", `/0.1/users/${user}/external`, { token: admin });
      expect(list.status).toBe(200);
      const notes = list.json.items.find((i: { type: string }) => i.type === "notes");
      expect(notes).toEqual({
        type: "notes",
        data: { note: "hello" },
        enabled: true,
        plugin_info: { required_acl: ["notes.read"] },
      });
      expect(list.json.items.find((i: { type: string }) => i.type === "mobile")).toEqual({
        type: "mobile",
        data: {},
        enabled: false,
        plugin_info: {},
      });
      expect(list.json.total).toBe(4);
      expect(
        (await t.request("GET", `/0.1/users/${user}/external?search=goo`, { token: admin })).json.items.map(
          (i: { type: string }) => i.type,
        ),
      ).toEqual(["google"]);
      const boom = await t.request("GET", `/0.1/users/${user}/external/notes/boom`, { token: admin });
      expect([boom.status, boom.json.error_id]).toEqual([500, "internal-error"]);
      expect(boom.text).not.toContain("/srv/secret");
      expect((await t.request("GET", `/0.1/users/${user}/external/notes`, { token: admin })).json.note).toBe("hello");
      expect((await t.request("GET", `/0.1/users/${user}/external/nope`, { token: admin })).status).toBe(404);
      expect((await t.request("GET", "/0.1/external/nope/config", { token: admin })).status).toBe(404);
      const users = await t.request("GET", "/0.1/external/notes/users", { token: admin });
      expect(users.json).toEqual({ items: [{ uuid: user }], filtered: 1, total: 1 });
    });

    test("tenant configuration: create, conflict, read, replace, delete", async () => {
      const { t, admin } = await setup();
      let r = await t.request("POST", "/0.1/external/notes/config", { token: admin, body: { a: 1 } });
      expect([r.status, r.json]).toEqual([201, ""]);
      r = await t.request("POST", "/0.1/external/notes/config", { token: admin, body: { a: 2 } });
      expect([r.status, r.json.error_id]).toEqual([409, "conflict"]);
      expect((await t.request("PUT", "/0.1/external/notes/config", { token: admin, body: { b: 2 } })).status).toBe(204);
      expect((await t.request("GET", "/0.1/external/notes/config", { token: admin })).json).toEqual({ b: 2 });
      expect((await t.request("DELETE", "/0.1/external/notes/config", { token: admin })).status).toBe(204);
      expect((await t.request("GET", "/0.1/external/notes/config", { token: admin })).status).toBe(404);
      expect((await t.request("POST", "/0.1/external/notes/config", { token: admin, body: [1] })).status).toBe(400);
    });

    test("isolation: other tenants' admins reach nothing of the user's links or the tenant's config", async () => {
      const { t, tenant, user, admin } = await setup();
      await t.request("POST", `/0.1/users/${user}/external/notes`, { token: admin, body: { note: "mine" } });
      await t.request("POST", "/0.1/external/notes/config", { token: admin, body: { secret: "tenant" } });
      for (const other of [await createTenantRow(t.app), await createTenantRow(t.app, { parentUuid: tenant })]) {
        const token = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: other })).token;
        expect((await t.request("GET", `/0.1/users/${user}/external`, { token })).status).toBe(404);
        expect((await t.request("GET", `/0.1/users/${user}/external/notes`, { token })).status).toBe(404);
        expect((await t.request("DELETE", `/0.1/users/${user}/external/notes`, { token })).status).toBe(204); // touches nothing (D4 of docs/wazo-auth-differences.md, D9): the data is still there below
        expect((await t.request("POST", `/0.1/users/${user}/external/mobile`, { token, body: {} })).status).toBe(404);
        expect((await t.request("GET", "/0.1/external/notes/config", { token })).status).toBe(404);
        expect((await t.request("GET", "/0.1/external/notes/users?recurse=true", { token })).json.total).toBe(0);
      }
      expect((await t.request("GET", `/0.1/users/${user}/external/notes`, { token: admin })).json.note).toBe("mine");
      const parent = (await tokenFor(t.app, { acl: ["auth.#"] })).token;
      expect((await t.request("GET", "/0.1/external/notes/config", { token: parent, tenant })).json).toEqual({
        secret: "tenant",
      });
    });
  },
  { config },
);

describe("a required plugin that fails stops the start", () => {
  test("start-up throws, naming the plugin", async () => {
    await expect(
      createTestApp("pglite", {
        config: {
          plugins: {
            external_auth: { broken: { module: "./tests/fixtures/external-auth/broken-load.ts", required: true } },
          },
        },
      }),
    ).rejects.toThrow(/broken/);
  });
});

describe("OAuth2 redirect URL", () => {
  // Only the configuration is read: the three sources, most specific first.
  const url = (config: Record<string, unknown>) =>
    buildOAuth2RedirectUrl({ config: parseConfig(config) } as AppContext, "google");
  test("follows oauth2_redirect_base_url, else public_url, else the listener's own port", () => {
    expect(url({ rest_api: { port: 45040 } })).toBe("http://127.0.0.1:45040/0.1/external/google/oauth2/callback");
    expect(url({ rest_api: { listen: "0.0.0.0", port: 8080 } })).toBe(
      "http://127.0.0.1:8080/0.1/external/google/oauth2/callback",
    );
    expect(url({ rest_api: { listen: "::1", port: 8080 } })).toBe(
      "http://[::1]:8080/0.1/external/google/oauth2/callback",
    );
    expect(url({ public_url: "https://auth.example.com/api/auth" })).toBe(
      "https://auth.example.com/api/auth/0.1/external/google/oauth2/callback",
    );
    expect(url({ public_url: "https://auth.example.com/", oauth2_redirect_base_url: "https://cb.example.com" })).toBe(
      "https://cb.example.com/0.1/external/google/oauth2/callback",
    );
  });
});
