// An OIDC refresh continues the session of the sign-in it descends from (one session per sign-in,
// refreshed in place, as Keycloak's or ZITADEL's users expect):
//   - the session list stays at one session however often a client refreshes, and the session cap
//     is not consumed by refreshes;
//   - the refreshed ID tokens keep the sign-in's `sid` (Back-Channel Logout 1.0 §2.1) and `auth_time`;
//   - ending the session ends its refresh tokens: the next refresh is `invalid_grant`;
//   - a session outlives its access tokens while its refresh token lives (the expiry purge, no
//     expire-soon notice), and ends as any session once that refresh token is gone;
//   - a refresh token issued before the link (migration 0042) opens a session once and is linked to it;
//   - reuse detection still ends the grant with its session.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { oidcRefreshTokens, tokens } from "../../src/db/schema.ts";
import { notifyExpiringSoon, purgeBatch } from "../../src/services/auth/token-cleanup.ts";
import { hashToken } from "../../src/services/oidc/grants.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { browserSignIn, insecure, serveApp, type ServedApp, startAuthorization } from "../helpers/oidc.ts";

const APP_REDIRECT = "com.example.phone:/cb";
const SCOPE = "openid offline_access";
/** The session cap of this file: more refreshes than this must still be one session. */
const CAP = 2;

const claimsOf = (idToken: string) =>
  JSON.parse(Buffer.from(idToken.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;

describeEachDb(
  "OIDC refresh continues the sign-in's session",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let tenant: string;
    let admin: string;
    let phone: string;
    let server: string;
    let serverSecret: string;

    const register = async (name: string, clientType: "public" | "confidential") => {
      const r = await get().request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: {
          name,
          client_type: clientType,
          first_party: true,
          redirect_uris: [APP_REDIRECT],
          grant_types: ["authorization_code", "refresh_token"],
          scopes: ["openid", "profile", "offline_access"],
        },
      });
      if (r.status !== 201) throw new Error(r.text);
      return r.json as { client_id: string; client_secret?: string };
    };
    const tokenEndpoint = async (form: Record<string, string>) => {
      const r = await fetch(`${issuer.href}/token`, {
        method: "POST",
        body: new URLSearchParams(form),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      });
      return { status: r.status, json: (await r.json()) as Record<string, string> };
    };
    const secretOf = (clientId: string): Record<string, string> =>
      clientId === server ? { client_secret: serverSecret } : {};
    const refresh = (clientId: string, refreshToken: string) =>
      tokenEndpoint({
        grant_type: "refresh_token",
        client_id: clientId,
        refresh_token: refreshToken,
        ...secretOf(clientId),
      });
    const sessionOf = async (accessToken: string) => {
      const r = await get().request("GET", `/0.1/token/${accessToken}`);
      expect(r.status).toBe(200);
      return r.json.data.session_uuid as string;
    };
    const alive = async (accessToken: string) => (await get().request("HEAD", `/0.1/token/${accessToken}`)).status;
    const sessionsOf = async (userUuid: string) => {
      const r = await get().request("GET", `/0.1/users/${userUuid}/sessions`, { token: admin });
      expect(r.status).toBe(200);
      return (r.json.items as { uuid: string }[]).map((s) => s.uuid);
    };
    const rowsOf = (userUuid: string) =>
      get().app.db.select().from(oidcRefreshTokens).where(eq(oidcRefreshTokens.userUuid, userUuid));

    /** A new user of the tenant, signed in to `clientId` through the hosted login page: its first tokens. */
    async function signedIn(clientId = phone) {
      const username = `u${crypto.randomUUID().slice(0, 8)}`;
      const uuid = await createUserRow(get().app, { tenantUuid: tenant, username, password: "pw-secret" });
      const config = await oidc.discovery(issuer, clientId, undefined, oidc.None(), insecure);
      const started = await startAuthorization(config, APP_REDIRECT, { scope: SCOPE });
      const back = await browserSignIn(served.url, started.url, username, "pw-secret");
      const first = await tokenEndpoint({
        grant_type: "authorization_code",
        client_id: clientId,
        code: back.searchParams.get("code")!,
        code_verifier: started.verifier,
        redirect_uri: APP_REDIRECT,
        ...secretOf(clientId),
      });
      expect(first.status).toBe(200);
      return { uuid, tokens: first.json, session: await sessionOf(first.json.access_token!) };
    }

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      phone = (await register("Phone", "public")).client_id;
      const s = await register("Server", "confidential");
      server = s.client_id;
      serverSecret = s.client_secret!;
    });
    afterAll(() => served?.stop());

    test("refreshes past the session cap stay one session, with the sign-in's sid and auth_time", async () => {
      const { uuid, tokens: first, session } = await signedIn();
      const signIn = claimsOf(first.id_token!);
      expect(signIn.sid).toBeString();
      let refreshToken = first.refresh_token!;
      const issued: string[] = [];
      for (let i = 0; i < CAP + 3; i++) {
        const r = await refresh(phone, refreshToken);
        expect(r.status).toBe(200); // never 429 (the cap): no new session
        expect(r.json.refresh_token).not.toBe(refreshToken); // a public client's rotation goes on
        refreshToken = r.json.refresh_token!;
        expect(await sessionOf(r.json.access_token!)).toBe(session);
        const claims = claimsOf(r.json.id_token!);
        expect(claims.sid).toBe(signIn.sid);
        expect(claims.auth_time).toBe(signIn.auth_time);
        issued.push(r.json.access_token!);
      }
      expect(await sessionsOf(uuid)).toEqual([session]);
      // A new access token each time; the earlier ones stay valid until they expire.
      expect(new Set(issued).size).toBe(issued.length);
      expect(await alive(first.access_token!)).toBe(204);
      // Every refresh token of the lineage names the session.
      expect((await rowsOf(uuid)).every((r) => r.sessionUuid === session)).toBe(true);
    });

    test("a confidential client's refresh (no rotation) continues the session too", async () => {
      const { uuid, tokens: first, session } = await signedIn(server);
      for (let i = 0; i < CAP + 1; i++) {
        const r = await refresh(server, first.refresh_token!);
        expect(r.status).toBe(200);
        expect(r.json.refresh_token).toBe(first.refresh_token!);
        expect(await sessionOf(r.json.access_token!)).toBe(session);
        expect(claimsOf(r.json.id_token!).sid).toBe(claimsOf(first.id_token!).sid);
      }
      expect(await sessionsOf(uuid)).toEqual([session]);
    });

    test("deleting the session ends its refresh tokens: the next refresh is invalid_grant", async () => {
      const { uuid, tokens: first, session } = await signedIn();
      const once = await refresh(phone, first.refresh_token!);
      expect(once.status).toBe(200);
      const gone = await get().request("DELETE", `/0.1/users/${uuid}/sessions/${session}`, { token: admin });
      expect(gone.status).toBe(204);
      expect(await refresh(phone, once.json.refresh_token!)).toMatchObject({
        status: 400,
        json: { error: "invalid_grant" },
      });
      expect(await rowsOf(uuid)).toEqual([]);
      expect(await sessionsOf(uuid)).toEqual([]);
      expect(await alive(once.json.access_token!)).toBe(404);
    });

    test("a continued session outlives its access tokens while its refresh token lives, then expires", async () => {
      const t = get();
      const { uuid, tokens: first, session } = await signedIn(server);
      const ofSession = () => t.app.db.select().from(tokens).where(eq(tokens.sessionUuid, session));
      // About to expire: no `auth_session_expire_soon`, the session does not end with its access token.
      await t.app.db
        .update(tokens)
        .set({ expireT: Math.floor(Date.now() / 1000) + 1 })
        .where(eq(tokens.sessionUuid, session));
      await notifyExpiringSoon(t.app);
      expect((await ofSession()).map((x) => x.expireSoonNotified)).toEqual([false]);
      const past = Math.floor(Date.now() / 1000) - 10;
      await t.app.db.update(tokens).set({ expireT: past }).where(eq(tokens.sessionUuid, session));
      await purgeBatch(t.app);
      expect(await sessionsOf(uuid)).toEqual([session]);
      // Its refresh continues it, and the expired access token is shed with the refresh.
      const r = await refresh(server, first.refresh_token!);
      expect(r.status).toBe(200);
      expect(await sessionOf(r.json.access_token!)).toBe(session);
      expect((await ofSession()).map((x) => x.uuid)).toEqual([r.json.access_token!]);
      // Its refresh token expired too: the session ends as any session, and nothing resurrects it.
      await t.app.db.update(tokens).set({ expireT: past }).where(eq(tokens.sessionUuid, session));
      await t.app.db
        .update(oidcRefreshTokens)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(oidcRefreshTokens.sessionUuid, session));
      await purgeBatch(t.app);
      expect(await sessionsOf(uuid)).toEqual([]);
      expect((await refresh(server, first.refresh_token!)).json.error).toBe("invalid_grant");
    });

    test("a refresh token issued before the link opens a session once, then continues it", async () => {
      const t = get();
      const { uuid, tokens: first, session } = await signedIn();
      await t.app.db
        .update(oidcRefreshTokens)
        .set({ sessionUuid: null, sid: null })
        .where(eq(oidcRefreshTokens.userUuid, uuid));
      const opened = await refresh(phone, first.refresh_token!);
      expect(opened.status).toBe(200);
      const linked = await sessionOf(opened.json.access_token!);
      expect(linked).not.toBe(session);
      const [successor] = await t.app.db
        .select()
        .from(oidcRefreshTokens)
        .where(eq(oidcRefreshTokens.tokenHash, hashToken(opened.json.refresh_token!)));
      expect(successor!.sessionUuid).toBe(linked);
      let refreshToken = opened.json.refresh_token!;
      for (let i = 0; i < 2; i++) {
        const r = await refresh(phone, refreshToken);
        expect(r.status).toBe(200);
        expect(await sessionOf(r.json.access_token!)).toBe(linked);
        refreshToken = r.json.refresh_token!;
      }
      expect((await sessionsOf(uuid)).sort()).toEqual([session, linked].sort());
    });

    test("a rotated refresh token presented again still revokes the grant, its session with it", async () => {
      const t = get();
      const { uuid, tokens: first, session } = await signedIn();
      const rotated = await refresh(phone, first.refresh_token!);
      expect(rotated.status).toBe(200);
      // The rotation, as it would look once the grace period has passed.
      await t.app.db
        .update(oidcRefreshTokens)
        .set({ rotatedAt: new Date(Date.now() - (t.app.config.oidc.refresh_token_reuse_grace + 1) * 1000) })
        .where(eq(oidcRefreshTokens.tokenHash, hashToken(first.refresh_token!)));
      expect((await refresh(phone, first.refresh_token!)).json.error).toBe("invalid_grant");
      expect(await sessionsOf(uuid)).not.toContain(session);
      expect(await alive(rotated.json.access_token!)).toBe(404);
      expect((await refresh(phone, rotated.json.refresh_token!)).json.error).toBe("invalid_grant");
      expect(await rowsOf(uuid)).toEqual([]);
    });
  },
  { config: { max_user_concurrent_sessions: CAP } },
);
