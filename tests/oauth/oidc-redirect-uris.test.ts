// Redirect URIs at registration (RFC 6749 §3.1.2, §3.1.2.1; RFC 8252 §7.3, §8.3; RFC 9700 §2.1) and
// their matching at the authorization endpoint: no empty host, no userinfo, no wildcard, no fragment;
// plain http only on a loopback IP literal unless the client sets `allow_insecure_redirects`; a
// loopback redirect URI matches any port. Also: clients stored before the rule keep working (the
// migration), and the console's own client on a plain-http address.
import { beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { oidcClients } from "../../src/db/schema.ts";
import { CONSOLE_CLIENT_ID, syncConsoleClient } from "../../src/services/console/client.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { openLoginPage, serveApp, submitLogin } from "../helpers/oidc.ts";

const WEB = {
  name: "web",
  client_type: "confidential",
  redirect_uris: ["https://rp.example.com/cb"],
  post_logout_redirect_uris: ["https://rp.example.com/bye"],
  first_party: true,
};

describeEachDb("OpenID Connect redirect URIs", (get) => {
  let tenant: string;
  let admin: string;
  beforeAll(async () => {
    const t = get();
    tenant = await createTenantRow(t.app);
    admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    await createUserRow(t.app, { tenantUuid: tenant, username: "nat", password: "nat-secret" });
  });
  const create = (body: Record<string, unknown>) =>
    get().request("POST", "/0.1/oidc/clients", { token: admin, body: { ...WEB, ...body } });

  test("refused at registration, in redirect_uris and post_logout_redirect_uris: empty host, userinfo, wildcard, fragment", async () => {
    const t = get();
    const before = (await t.app.db.select().from(oidcClients)).length;
    const cases: Array<[string, string]> = [
      ["https:///cb", "host"],
      ["https:/cb", "host"],
      ["http:///cb", "host"],
      ["https://u:p@rp.example.com/cb", "no userinfo"],
      ["https://rp.example.com@evil.example.com/cb", "no userinfo"],
      ["https://@rp.example.com/cb", "no userinfo"],
      ["com.example.app://u@host/cb", "no userinfo"],
      ["https://*.example.com/cb", "no wildcard"],
      ["https://rp.example.com/*", "no wildcard"],
      ["https://rp.example.com/cb#frag", "no fragment"],
    ];
    for (const [uri, constraint] of cases)
      for (const field of ["redirect_uris", "post_logout_redirect_uris"]) {
        const r = await create({ [field]: [uri], allow_insecure_redirects: true });
        expect([uri, field, r.status]).toEqual([uri, field, 400]);
        expect(r.json.error_id).toBe("invalid-data");
        expect(r.json.details[field][0]).toMatchObject({ constraint_id: "uri", constraint });
      }
    // Also on update.
    const made = await create({});
    expect(made.status).toBe(201);
    const put = await t.request("PUT", `/0.1/oidc/clients/${made.json.client_id}`, {
      token: admin,
      body: { ...WEB, client_type: undefined, redirect_uris: ["https://*.example.com/cb"] },
    });
    expect(put.status).toBe(400);
    expect(put.json.details.redirect_uris[0]).toMatchObject({ constraint: "no wildcard" });
    expect((await t.app.db.select().from(oidcClients)).length).toBe(before + 1);
  });

  test("plain http off loopback: refused for confidential and public clients unless allow_insecure_redirects", async () => {
    const t = get();
    const insecure = [
      { redirect_uris: ["http://rp.example.com/cb"] },
      { redirect_uris: ["http://localhost:3000/cb"] }, // RFC 8252 §8.3: a name, not a loopback literal
      { redirect_uris: ["http://127.0.0.2/cb"] },
      { redirect_uris: ["HTTP://rp.example.com/cb"] },
      { post_logout_redirect_uris: ["http://rp.example.com/bye"] },
    ];
    for (const body of insecure)
      for (const client_type of ["confidential", "public"]) {
        const r = await create({ ...body, client_type });
        const field = Object.keys(body)[0]!;
        expect([body, client_type, r.status]).toEqual([body, client_type, 400]);
        expect(r.json.details[field]).toMatchObject({ constraint_id: "https_required" });
        const allowed = await create({ ...body, client_type, allow_insecure_redirects: true });
        expect(allowed.status).toBe(201);
        expect(allowed.json.allow_insecure_redirects).toBe(true);
      }
    // Loopback IP literals need nothing (RFC 8252 §7.3); https never does.
    const loopback = await create({
      client_type: "public",
      redirect_uris: ["http://127.0.0.1/cb", "http://[::1]:8080/cb", "https://localhost/cb"],
      post_logout_redirect_uris: ["http://127.0.0.1/bye"],
    });
    expect(loopback.status).toBe(201);
    expect(loopback.json.allow_insecure_redirects).toBe(false);
    // On update: absent, the flag is kept; set to false, the plain-http URI is refused.
    const dev = await create({ redirect_uris: ["http://dev.example.com/cb"], allow_insecure_redirects: true });
    const path = `/0.1/oidc/clients/${dev.json.client_id}`;
    const body = { name: "dev", redirect_uris: ["http://dev.example.com/cb2"], post_logout_redirect_uris: [] };
    expect((await t.request("PUT", path, { token: admin, body })).status).toBe(204);
    expect((await t.request("GET", path, { token: admin })).json).toMatchObject({
      redirect_uris: ["http://dev.example.com/cb2"],
      allow_insecure_redirects: true,
    });
    const cleared = await t.request("PUT", path, { token: admin, body: { ...body, allow_insecure_redirects: false } });
    expect(cleared.status).toBe(400);
    expect(cleared.json.details.redirect_uris).toMatchObject({ constraint_id: "https_required" });
  });

  test("authorization: a loopback redirect URI matches any port (RFC 8252 §7.3), the code goes to that port; nothing else is loosened", async () => {
    const t = get();
    const served = serveApp(t);
    try {
      const app = await create({
        client_type: "public",
        redirect_uris: ["http://127.0.0.1/cb", "http://[::1]:8080/cb"],
        allow_insecure_redirects: false,
      });
      const dev = await create({ redirect_uris: ["http://localhost:3000/cb"], allow_insecure_redirects: true });
      expect([app.status, dev.status]).toEqual([201, 201]);
      const verifier = "dBjftJeZ4CVP-mJ92K27uhbUJU1p1r_wW1gFWFOEjXk";
      const challenge = createHash("sha256").update(verifier).digest("base64url"); // RFC 7636 §4.2
      const url = (clientId: string, redirect: string) =>
        `${served.url}/0.1/oidc/authorize?${new URLSearchParams({
          client_id: clientId,
          redirect_uri: redirect,
          response_type: "code",
          scope: "openid",
          code_challenge: challenge,
          code_challenge_method: "S256",
        })}`;
      for (const redirect of [
        "http://127.0.0.1/cb",
        "http://127.0.0.1:51234/cb",
        "http://127.0.0.1:1/cb",
        "http://[::1]/cb",
        "http://[::1]:65535/cb",
      ])
        expect([redirect, (await openLoginPage(url(app.json.client_id, redirect))).status]).toEqual([redirect, 200]);
      for (const [clientId, redirect] of [
        [app.json.client_id, "http://127.0.0.1:51234/cb2"],
        [app.json.client_id, "http://127.0.0.1:51234/cb?x=1"],
        [app.json.client_id, "http://127.0.0.1:99999/cb"],
        [app.json.client_id, "http://127.0.0.1:0/cb"],
        [app.json.client_id, "http://[::1]:51234/cb#x"],
        [app.json.client_id, "https://127.0.0.1:51234/cb"],
        [app.json.client_id, "http://127.0.0.1.evil.example.com:51234/cb"],
        [app.json.client_id, "http://127.0.0.1:51234@evil.example.com/cb"],
        [app.json.client_id, "http://[::1]:51234/cb/../cb"],
        // localhost is no loopback literal: exact match only.
        [dev.json.client_id, "http://localhost:4000/cb"],
      ]) {
        const page = await openLoginPage(url(clientId!, redirect!));
        expect([redirect, page.status, page.headers.get("location")]).toEqual([redirect, 400, null]);
      }
      // The code goes back to the port asked, and is exchanged with that very redirect_uri (RFC 6749 §4.1.3).
      const asked = "http://127.0.0.1:51234/cb";
      const page = await openLoginPage(url(app.json.client_id, asked));
      const back = await submitLogin(served.url, page, "nat", "nat-secret");
      expect(back.status).toBe(303);
      const location = new URL(back.headers.get("location")!);
      expect(`${location.origin}${location.pathname}`).toBe(asked);
      const exchange = (redirect: string) =>
        fetch(`${served.url}/0.1/oidc/token`, {
          method: "POST",
          body: new URLSearchParams({
            grant_type: "authorization_code",
            code: location.searchParams.get("code")!,
            redirect_uri: redirect,
            client_id: app.json.client_id,
            code_verifier: verifier,
          }),
        });
      const tokens = await exchange(asked);
      expect(tokens.status).toBe(200);
      expect((await tokens.json()).token_type).toBe("Bearer");
    } finally {
      await served.stop();
    }
  });

  test("clients stored with a plain-http redirect URI before the rule get allow_insecure_redirects (migration 0023)", async () => {
    const t = get();
    const row = (id: string, redirectUris: string[], postLogoutRedirectUris: string[] = []) => ({
      clientId: id,
      tenantUuid: tenant,
      name: id.slice(0, 8),
      clientType: "confidential",
      redirectUris,
      postLogoutRedirectUris,
      grantTypes: ["authorization_code"],
      scopes: ["openid"],
      idTokenSignedResponseAlg: "ES256",
    });
    const ids = Array.from({ length: 6 }, () => crypto.randomUUID());
    await t.app.db
      .insert(oidcClients)
      .values([
        row(ids[0]!, ["http://intranet.example.com/cb"]),
        row(ids[1]!, ["https://rp.example.com/cb"], ["http://intranet.example.com/bye"]),
        row(ids[2]!, ["http://127.0.0.1:8123/cb", "http://[::1]/cb", "com.example.app:/cb"]),
        row(ids[3]!, ["https://rp.example.com/cb"]),
        row(ids[4]!, ["http://localhost:3000/cb"]),
        row(ids[5]!, ["http://127.0.0.1.nip.io/cb"]),
      ]);
    const migration = readFileSync(join(import.meta.dir, "../..", "drizzle", "0023_insecure_redirects.sql"), "utf8");
    const update = migration.split("--> statement-breakpoint").find((s) => s.includes("UPDATE"))!;
    await t.app.db.execute(sql.raw(update));
    const flags = [];
    for (const id of ids) {
      const [r] = await t.app.db.select().from(oidcClients).where(eq(oidcClients.clientId, id));
      flags.push(r!.allowInsecureRedirects);
    }
    expect(flags).toEqual([true, true, false, false, true, true]);
  });

  test("the console's own client on a plain-http public address is marked allow_insecure_redirects; on https it is not", async () => {
    const t = get();
    const flag = async () =>
      (await t.app.db.select().from(oidcClients).where(eq(oidcClients.clientId, CONSOLE_CLIENT_ID)))[0]
        ?.allowInsecureRedirects;
    await syncConsoleClient(t.app, ["http://tessera.example.com:9497/0.1/console/callback"]);
    expect(await flag()).toBe(true);
    await syncConsoleClient(t.app, ["https://tessera.example.com/0.1/console/callback"]);
    expect(await flag()).toBe(false);
  });
});
