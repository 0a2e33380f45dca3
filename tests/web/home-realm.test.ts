// Home-realm discovery on the hosted login page (issue 40 item 2, docs/federation.md), HTTP-level: a
// browser without JavaScript (helpers/oidc.ts TestBrowser), a real upstream provider (panva's
// oidc-provider, child process) and a real SAML test IdP. The identifier step sends a login name
// whose domain the client's tenant claims to that tenant's one provider, and asks the password for
// any other name — the same page whether or not the user exists.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as oidc from "openid-client";
import { realmLoads } from "../../src/services/integrations/home-realm.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { adminToken, createUserRow } from "../helpers/fixtures.ts";
import {
  discoverClient,
  hiddenFieldsOf,
  serveApp,
  startAuthorization,
  TestBrowser,
  type ServedApp,
} from "../helpers/oidc.ts";
import { startTestIdp, type TestIdp } from "../helpers/saml-idp.ts";
import { samlTenant, type SamlTenant } from "../helpers/saml-tenant.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const LOCAL = { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } };

describeEachDb(
  "home-realm discovery on the login page",
  (get) => {
    let t: TestApp;
    let served: ServedApp;
    let upstream: UpstreamOidc;
    let idp: TestIdp;
    let admin: string;
    const tenants: Record<string, string> = {};
    const clients: Record<string, oidc.Configuration> = {};
    let corpProvider: string;
    let acme: SamlTenant;

    const api = async (method: string, path: string, body?: unknown, tenant?: string) => {
      const res = await fetch(`${served.url}${path}`, {
        method,
        headers: {
          "X-Auth-Token": admin,
          ...(tenant ? { "Wazo-Tenant": tenant } : {}),
          ...(body ? { "Content-Type": "application/json" } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, text, json: text ? JSON.parse(text) : null };
    };

    const addTenant = async (name: string, domains: string[]) => {
      const made = await api("POST", "/0.1/tenants", { name, domain_names: domains });
      expect(made.status).toBe(200);
      return made.json.uuid as string;
    };

    const addProvider = async (tenant: string, displayName: string, provisioning = "create") => {
      const base = { name: `p-${Math.random()}`, display_name: displayName, issuer: upstream.issuer, provisioning };
      const made = await api("POST", "/0.1/backends/oidc", { ...base, client_id: "x", client_secret: "x" }, tenant);
      if (made.status !== 201) throw new Error(made.text);
      const creds = await upstream.register([made.json.redirect_uri]);
      expect((await api("PUT", `/0.1/backends/oidc/${made.json.uuid}`, { ...base, ...creds }, tenant)).status).toBe(
        204,
      );
      return made.json.uuid as string;
    };

    const addClient = async (tenant: string) => {
      const r = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        tenant,
        body: { name: "RP", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
      });
      expect(r.status).toBe(201);
      return discoverClient(new URL(`${served.url}/0.1/oidc`), r.json);
    };

    beforeAll(async () => {
      t = get();
      served = serveApp(t);
      upstream = await startUpstreamOidc({ accounts: { alice: { preferred_username: "alice.up" } } });
      idp = await startTestIdp("acme");
      admin = await adminToken(t.app);
      // corp: one upstream provider for corp.example; other: the same for other.example; two: two providers.
      tenants.corp = await addTenant("corp", ["corp.example"]);
      tenants.other = await addTenant("other", ["other.example"]);
      tenants.two = await addTenant("two", ["two.example"]);
      corpProvider = await addProvider(tenants.corp, "Corp SSO");
      await addProvider(tenants.other, "Other SSO");
      await addProvider(tenants.two, "First SSO");
      await addProvider(tenants.two, "Second SSO");
      acme = await samlTenant(t, admin, idp, "acme");
      for (const name of ["corp", "two"]) clients[name] = await addClient(tenants[name]!);
      clients.acme = await addClient(acme.tenant);
      await createUserRow(t.app, { tenantUuid: tenants.corp, username: "known@elsewhere.example", password: "pw-1" });
    }, 60_000);
    afterAll(async () => {
      served?.stop();
      await upstream?.stop();
      await idp?.stop();
    });

    /** The login page of a fresh authorization of `client`, and the identifier submitted on it. */
    const identify = async (client: string, login: string, extra: Record<string, string> = {}) => {
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(clients[client]!, REDIRECT, { scope: "openid", ...extra });
      const shown = await browser.get(flow.url);
      expect(shown.res.status).toBe(200);
      const answer = await browser.post("/0.1/oidc/authorize", { ...hiddenFieldsOf(shown.html), username: login });
      return { browser, shown, answer };
    };

    const isPasswordStep = (html: string, login: string) => {
      expect(html).toContain('name="password"');
      expect(html).toContain(`autocomplete="username" readonly value="${login}"`);
      expect(html).toContain('id="change-account"');
      expect(html).not.toContain('name="step"');
    };

    test("a tenant whose domain leads to one provider: the page asks the login name alone", async () => {
      const browser = new TestBrowser(served.url);
      const flow = await startAuthorization(clients.corp!, REDIRECT, { scope: "openid" });
      const shown = await browser.get(flow.url);
      expect(shown.res.status).toBe(200);
      expect(shown.html).toContain('name="step" value="identifier"');
      expect(shown.html).not.toContain('name="password"');
      expect(shown.html).toContain('autocomplete="username"');
      expect(shown.html).toContain("Continue with Corp SSO");
      // The answer may redirect to the upstream: the form's CSP lets it (form-action governs redirects).
      expect(shown.res.headers.get("content-security-policy")).toContain(new URL(upstream.issuer).origin);
    });

    test("an unclaimed domain: the password step, the same for a known user as for an unknown one", async () => {
      const unknown = await identify("corp", "nobody@elsewhere.example");
      expect(unknown.answer.res.status).toBe(200);
      isPasswordStep(unknown.answer.html, "nobody@elsewhere.example");
      const known = await identify("corp", "known@elsewhere.example");
      expect(known.answer.res.status).toBe(200);
      isPasswordStep(known.answer.html, "known@elsewhere.example");
      // Nothing but the name typed and the per-browser token differs: the page says nothing of the account.
      const strip = (html: string, login: string) =>
        html
          .replaceAll(login, "LOGIN")
          .replace(/name="csrf_token" value="[^"]*"/, "")
          .replace(/name="state" value="[^"]*"/, "")
          .replace(/state=[^&"]*/g, "")
          .replace(/(code_challenge|nonce)=[^&"]*/g, "")
          .replace(/name="nonce" value="[^"]*"/, "")
          .replace(/<style "[^"]*">/g, "<style>")
          .replace(/name="code_challenge" value="[^"]*"/, "");
      expect(strip(known.answer.html, "known@elsewhere.example")).toBe(
        strip(unknown.answer.html, "nobody@elsewhere.example"),
      );
      // The password step signs the known user in.
      const signedIn = await known.browser.post("/0.1/oidc/authorize", {
        ...hiddenFieldsOf(known.answer.html),
        username: "known@elsewhere.example",
        password: "pw-1",
      });
      expect(signedIn.res.status).toBe(303);
      expect(signedIn.location!.searchParams.get("code")).toBeTruthy();
    });

    test("the claimed domain with one upstream provider: straight to its authorization endpoint, any user, any case", async () => {
      for (const login of ["alice@corp.example", "Nobody.At.All@CORP.Example"]) {
        const { browser, answer } = await identify("corp", login);
        expect(answer.res.status).toBe(303);
        expect(answer.location!.pathname).toBe("/0.1/oidc/authorize/upstream");
        expect(answer.location!.searchParams.get("provider")).toBe(corpProvider);
        const started = await browser.get(answer.location!.href);
        expect(started.res.status).toBe(303);
        expect(started.location!.href.startsWith(upstream.issuer)).toBe(true);
      }
    });

    test("login_hint to the upstream (OIDC Core §3.1.2.1): the name typed at the identifier step, or the request's", async () => {
      const reachUpstream = async (browser: TestBrowser, start: URL) => {
        const started = await browser.get(start.href);
        expect(started.res.status).toBe(303);
        expect(started.location!.href.startsWith(upstream.issuer)).toBe(true);
        await fetch(started.location!.href, { redirect: "manual" });
        return (await upstream.lastAuthorization())!;
      };
      const typed = await identify("corp", "Alice@corp.example");
      expect((await reachUpstream(typed.browser, typed.answer.location!)).login_hint).toBe("Alice@corp.example");
      const browser = new TestBrowser(served.url);
      const hinted = await startAuthorization(clients.corp!, REDIRECT, {
        scope: "openid",
        login_hint: "bob@corp.example",
      });
      const straight = await browser.get(hinted.url);
      expect(straight.res.status).toBe(303);
      expect((await reachUpstream(browser, straight.location!)).login_hint).toBe("bob@corp.example");
      // The button, no name given: no hint.
      const plain = await startAuthorization(clients.two!, REDIRECT, { scope: "openid" });
      const shown = await browser.get(plain.url);
      const href = /<a class="button secondary" href="([^"]+)">Continue with First SSO<\/a>/.exec(shown.html)![1]!;
      const button = new URL(href.replaceAll("&amp;", "&"), `${served.url}/0.1/oidc/authorize`);
      expect(await reachUpstream(browser, button)).not.toHaveProperty("login_hint");
    });

    test("whole labels only: a look-alike domain and a sub-domain get the password step", async () => {
      for (const login of ["x@evil-corp.example", "x@eu.corp.example", "x@corp.example.evil.test", "corp.example"]) {
        const { answer } = await identify("corp", login);
        expect(answer.res.status).toBe(200);
        isPasswordStep(answer.html, login);
      }
    });

    test("the claimed domain with SAML: straight to the SAML identity provider", async () => {
      const { answer } = await identify("acme", `bob@${acme.domain.toUpperCase()}`);
      expect(answer.res.status).toBe(303);
      expect(answer.location!.href.startsWith(`${idp.url}/sso`)).toBe(true);
    });

    test("a tenant with two providers: the password form with both buttons", async () => {
      // No domain of this tenant leads to one provider: the one form, as always, with its buttons.
      const { shown, browser } = await identify("two", "");
      expect(shown.html).not.toContain('name="step"');
      expect(shown.html).toContain('name="password"');
      // An identifier posted anyway (a stale page) gets the same form, the name filled in.
      const answer = await browser.post("/0.1/oidc/authorize", {
        ...hiddenFieldsOf(shown.html),
        step: "identifier",
        username: "carol@two.example",
      });
      expect(answer.res.status).toBe(200);
      expect(answer.html).toContain('value="carol@two.example"');
      expect(answer.html).toContain('name="password"');
      expect(answer.html).toContain("Continue with First SSO");
      expect(answer.html).toContain("Continue with Second SSO");
    });

    test("another tenant's domain, the flow bound to this client's tenant: the password step, never its provider", async () => {
      const { answer } = await identify("corp", "dave@other.example");
      expect(answer.res.status).toBe(200);
      isPasswordStep(answer.html, "dave@other.example");
      expect(answer.html).not.toContain("Other SSO");
    });

    test("login_hint: a claimed domain goes straight on; another is the password step; 'not you?' asks again", async () => {
      const browser = new TestBrowser(served.url);
      const claimed = await startAuthorization(clients.corp!, REDIRECT, {
        scope: "openid",
        login_hint: "alice@corp.example",
      });
      const straight = await browser.get(claimed.url);
      expect(straight.res.status).toBe(303);
      expect(straight.location!.pathname).toBe("/0.1/oidc/authorize/upstream");
      const other = await startAuthorization(clients.corp!, REDIRECT, {
        scope: "openid",
        login_hint: "known@elsewhere.example",
      });
      const shown = await browser.get(other.url);
      expect(shown.res.status).toBe(200);
      isPasswordStep(shown.html, "known@elsewhere.example");
      const change = shown.html.match(/href="([^"]+)" id="change-account"/)![1]!.replaceAll("&amp;", "&");
      const again = await browser.get(new URL(change, `${served.url}/0.1/oidc/authorize`).href);
      expect(again.res.status).toBe(200);
      expect(again.html).toContain('name="step" value="identifier"');
      expect(again.html).not.toContain('name="password"');
    });

    test("no read per request; a tenant's new domain is heard at once", async () => {
      await identify("corp", "warm@corp.example");
      const before = realmLoads(t.app);
      for (let i = 0; i < 3; i++) await identify("corp", `x${i}@corp.example`);
      expect(realmLoads(t.app)).toBe(before);
      expect((await identify("corp", "x@later.example")).answer.res.status).toBe(200);
      const put = await api("PUT", `/0.1/tenants/${tenants.corp}`, {
        name: "corp",
        domain_names: ["corp.example", "later.example"],
      });
      expect(put.status).toBe(204);
      const { answer } = await identify("corp", "x@later.example");
      expect(answer.res.status).toBe(303);
      expect(answer.location!.searchParams.get("provider")).toBe(corpProvider);
    });
  },
  { config: LOCAL },
);
