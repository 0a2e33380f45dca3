// The `github` preset through the hosted page, HTTP-level (a browser without JavaScript, helpers/oidc.ts):
// the upstream is panva's oidc-provider standing in for a GitHub Enterprise Server (plain OAuth 2.0 at
// GitHub's paths, no ID token, and the REST API's `/user` and `/user/emails` answered for the access
// token's account). JIT creation with the numeric id as subject, the names split, only a verified email
// kept; linking by a verified email only; the token API's `idp_token` not offered for GitHub.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import * as oidc from "openid-client";
import { emails, upstreamOidcLinks, upstreamOidcProviders, users } from "../../src/db/schema.ts";
import { unseal } from "../../src/services/secrets/sealing.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import {
  apiCall,
  discoverClient,
  followRedirects,
  serveApp,
  type ServedApp,
  startAuthorization,
  TestBrowser,
} from "../helpers/oidc.ts";
import { tempDirs } from "../helpers/temp-dirs.ts";
import { addUpstreamProvider, startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
// The client secrets sealed at rest (services/secrets/sealing.ts) with a key file, as an operator sets it.
const KEY_FILE = join(tempDirs("tessera-sealing-")(), "sealing.key");
writeFileSync(KEY_FILE, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
const LOCAL = {
  outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true },
  secret_sealing: { key_file: KEY_FILE },
};

describeEachDb(
  "sign-in through GitHub (a GitHub Enterprise Server stand-in)",
  (get) => {
    let served: ServedApp;
    let issuer: URL;
    let upstream: UpstreamOidc;
    let tenant: string;
    let admin: string;
    let config: oidc.Configuration;
    const secrets = new Map<string, string>();

    const api = (method: string, path: string, token: string, body?: unknown) =>
      apiCall(served.url, method, path, token, body);

    /** A GitHub provider at the stand-in's base URL, registered there as an OAuth app (client_secret_post). */
    const addGithub = async (display: string, provisioning: string) => {
      const added = await addUpstreamProvider(
        served.url,
        admin,
        upstream,
        { name: display, display_name: display, preset: "github", issuer: upstream.issuer, provisioning },
        { token_endpoint_auth_method: "client_secret_post" },
      );
      expect(added.json).toMatchObject({ preset: "github", scopes: ["read:user", "user:email"] });
      secrets.set(added.uuid, added.clientSecret);
      return added.uuid;
    };

    /** The login page, then the button of `label` followed as a browser does, to a page or to the client. */
    const signIn = async (
      account: string,
      label: string,
      browser = new TestBrowser(served.url),
      extra: Record<string, string> = {},
    ) => {
      await upstream.set({ account });
      // `prompt=login`: a browser signed in here still sees the login page and its buttons.
      const flow = await startAuthorization(config, REDIRECT, {
        scope: "openid profile email",
        prompt: "login",
        ...extra,
      });
      const shown = await browser.get(flow.url);
      const href = [...shown.html.matchAll(/<a class="button secondary" href="([^"]+)">([^<]+)<\/a>/g)].find(
        (m) => m[2] === label,
      )?.[1];
      expect(href).toBeDefined();
      return { ...(await followRedirects(browser, `${issuer.href}/${href!.replaceAll("&amp;", "&")}`)), flow };
    };

    const subOf = async (end: Awaited<ReturnType<typeof signIn>>) => {
      expect(end.res.status).toBe(303);
      const tokens = await oidc.authorizationCodeGrant(config, end.location!, {
        pkceCodeVerifier: end.flow.verifier,
        expectedState: end.flow.state,
        expectedNonce: end.flow.nonce,
      });
      return tokens.claims()!.sub;
    };

    beforeAll(async () => {
      const t = get();
      served = serveApp(t);
      issuer = new URL(`${served.url}/0.1/oidc`);
      upstream = await startUpstreamOidc({
        github: true,
        accounts: {
          "4242": {
            id: 4242,
            login: "octocat",
            name: "Mona Lisa Octocat",
            emails: [
              { email: "mona@old.example", primary: true, verified: false, visibility: "public" },
              { email: "mona@corp.example", verified: true, visibility: "private" },
            ],
          },
          "77": {
            id: 77,
            login: "hubber",
            name: "Hub",
            emails: [{ email: "hub@corp.example", primary: true, verified: false }],
          },
          "88": { id: 88, login: "kate-gh", emails: [{ email: "kate@corp.example", primary: true, verified: true }] },
        },
      });
      tenant = await createTenantRow(t.app);
      admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: { name: "RP", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
      });
      config = await discoverClient(issuer, client.json);
    });
    afterAll(async () => {
      served?.stop();
      await upstream?.stop();
    });

    test("JIT: the numeric id is the subject, login the username, name split, only the verified email", async () => {
      const t = get();
      const uuid = await addGithub("GitHub", "create");
      const end = await signIn("4242", "Continue with GitHub");
      // Off to GitHub's authorize path: state and PKCE S256, GitHub's scopes, no nonce (no ID token).
      const authorize = end.visited.find((u) => u.pathname === "/login/oauth/authorize")!;
      expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
      expect(authorize.searchParams.get("state")).toBeTruthy();
      expect(authorize.searchParams.get("scope")).toBe("read:user user:email");
      expect(authorize.searchParams.has("nonce")).toBe(false);
      expect(authorize.searchParams.has("login")).toBe(false);
      const sub = await subOf(end);
      const [user] = await t.app.db.select().from(users).where(eq(users.uuid, sub));
      expect(user).toMatchObject({
        tenantUuid: tenant,
        username: "octocat",
        firstname: "Mona Lisa",
        lastname: "Octocat",
        authenticationMethod: "oidc",
      });
      const mail = await t.app.db.select().from(emails).where(eq(emails.userUuid, sub));
      expect(mail.map((m) => m.address)).toEqual(["mona@corp.example"]);
      const links = await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, sub));
      expect(links.map((l) => [l.providerUuid, l.subject])).toEqual([[uuid, "4242"]]);
      // The client secret is sealed at rest, bound to its row; the exchange above opened it.
      const [row] = await t.app.db.select().from(upstreamOidcProviders).where(eq(upstreamOidcProviders.uuid, uuid));
      expect(row!.clientSecret.startsWith("sealed:")).toBe(true);
      expect(row!.clientSecret).not.toContain(secrets.get(uuid)!);
      expect(unseal(t.app, row!.clientSecret, uuid)).toBe(secrets.get(uuid)!);
      expect(() => unseal(t.app, row!.clientSecret, crypto.randomUUID())).toThrow("does not open");
      // A secret stored in clear before a key was configured is still used as it is.
      await t.app.db
        .update(upstreamOidcProviders)
        .set({ clientSecret: secrets.get(uuid)! })
        .where(eq(upstreamOidcProviders.uuid, uuid));
      expect(await subOf(await signIn("4242", "Continue with GitHub"))).toBe(sub);
      // A renamed login changes nothing: the link is the id.
      await upstream.set({ accounts: { "4242": { id: 4242, login: "octo-renamed", emails: [] } } });
      expect(await subOf(await signIn("4242", "Continue with GitHub"))).toBe(sub);
      await api("DELETE", `/0.1/backends/oidc/${uuid}`, admin);
    });

    test("the request's login_hint goes to GitHub as its `login` parameter (GitHub's equivalent), not as login_hint", async () => {
      const uuid = await addGithub("GitHub Hinted", "create");
      const end = await signIn("4242", "Continue with GitHub Hinted", new TestBrowser(served.url), {
        login_hint: "octocat",
      });
      const authorize = end.visited.find((u) => u.pathname === "/login/oauth/authorize")!;
      expect(authorize.searchParams.get("login")).toBe("octocat");
      expect(authorize.searchParams.has("login_hint")).toBe(false);
      expect(end.res.status).toBe(303);
      await get().request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: admin });
    });

    test("link: an unverified GitHub email never links; a verified one links the account signed in here", async () => {
      const t = get();
      const hub = await createUserRow(t.app, { tenantUuid: tenant, username: "hub", password: "hub-pw" });
      await t.app.db.insert(emails).values({ address: "hub@corp.example", confirmed: true, main: true, userUuid: hub });
      const kate = await createUserRow(t.app, { tenantUuid: tenant, username: "kate", password: "kate-pw" });
      await t.app.db
        .insert(emails)
        .values({ address: "kate@corp.example", confirmed: true, main: true, userUuid: kate });
      const uuid = await addGithub("GitHub Link", "link");
      const unverified = await signIn("77", "Continue with GitHub Link");
      expect(unverified.res.status).toBe(401);
      expect(unverified.html).toContain("No account here is linked to this GitHub Link identity");
      expect(await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, hub))).toEqual([]);
      // The verified email, in a browser signed in to that account: linked to GitHub's id.
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(config, REDIRECT, { scope: "openid" });
      expect((await browser.signIn(flow.url, "kate", "kate-pw")).res.status).toBe(303);
      expect(await subOf(await signIn("88", "Continue with GitHub Link", browser))).toBe(kate);
      const links = await t.app.db.select().from(upstreamOidcLinks).where(eq(upstreamOidcLinks.userUuid, kate));
      expect(links.map((l) => [l.providerUuid, l.subject])).toEqual([[uuid, "88"]]);
      await api("DELETE", `/0.1/backends/oidc/${uuid}`, admin);
    });

    test("no ID token from GitHub: native client ids are refused at configuration", async () => {
      const made = await api("POST", "/0.1/backends/oidc", admin, {
        name: "gh-native",
        display_name: "GitHub",
        preset: "github",
        client_id: "Iv1.abc",
        client_secret: "s",
        native_client_ids: ["Iv1.mobile"],
      });
      expect(made.status).toBe(400);
      expect(made.json.details.native_client_ids.constraint_id).toBe("not_applicable");
      expect(made.json.details.native_client_ids.message).toContain("GitHub issues no ID token");
    });

    test("github.com by default: GitHub's own endpoints, no request made at creation", async () => {
      const made = await api("POST", "/0.1/backends/oidc", admin, {
        name: "gh-com",
        display_name: "GitHub.com",
        preset: "github",
        client_id: "Iv1.abc",
        client_secret: "s",
      });
      expect(made.status).toBe(201);
      expect(made.json).toMatchObject({ issuer: "https://github.com", scopes: ["read:user", "user:email"] });
      expect(made.json).not.toHaveProperty("client_secret");
      await api("DELETE", `/0.1/backends/oidc/${made.json.uuid}`, admin);
    });
  },
  { config: LOCAL },
);
