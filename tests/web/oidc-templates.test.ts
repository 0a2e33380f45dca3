// The login page's layout, overridden per tenant (`oidc.tenant_login_page_templates`) as the email
// templates are overridden by configuration: the tenant's clients show it, every value stays
// escaped (`| safe` included), and the page's own protections (CSP header, CSRF field, no framing)
// do not depend on it — on the login page and the device verification page alike. Also: cookies
// are Secure when the public URL is https.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as oidc from "openid-client";
import { createTestApp, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { hiddenFieldsOf } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const HOSTILE = `<img src=x onerror="alert(1)">`;

let t: TestApp;
let dir: string;
const clients: Record<string, string> = {};
const admins: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "oidc-templates-"));
  t = await createTestApp("pglite", { config: { public_url: "https://auth.example.com" } });
  const layout = join(dir, "acme.html");
  writeFileSync(
    layout,
    `<!doctype html><html lang="en"><head><title>ACME · {{ title }}</title>
<style nonce="{{ style_nonce }}">body { background: #fff; }</style></head>
<body><header id="brand">ACME sign-in for {{ client_name }} / raw: {{ client_name | safe }}</header>
<script>document.title = "pwned"</script>
<main>{{ content }}</main></body></html>`,
  );
  const broken = join(dir, "broken.html");
  writeFileSync(broken, "<html>{% if %}</html>");
  for (const [name, file] of [
    ["acme", layout],
    ["plain", null],
    ["broken", broken],
  ] as const) {
    const tenant = await createTenantRow(t.app);
    if (file) t.app.config.oidc.tenant_login_page_templates[tenant] = file;
    const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
    admins[name] = admin;
    await createUserRow(t.app, { tenantUuid: tenant, username: `${name}-user`, password: "user-secret" });
    const r = await t.request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: `${name} ${HOSTILE}`, client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
    });
    clients[name] = r.json.client_id;
  }
}, 60_000);
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function authorize(clientId: string) {
  const q = new URLSearchParams({
    response_type: "code",
    scope: "openid",
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
    code_challenge_method: "S256",
  });
  return t.request("GET", `/0.1/oidc/authorize?${q}`);
}

test("a tenant's layout is shown to its clients; every value escaped, | safe included; CSP and CSRF field intact", async () => {
  const r = await authorize(clients.acme!);
  expect(r.status).toBe(200);
  expect(r.text).toContain('<header id="brand">ACME sign-in for acme &lt;img');
  expect(r.text).not.toContain("<img src=x");
  expect(r.text).toContain("raw: acme &lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
  // The step (form, CSRF field) is the page's own.
  expect(hiddenFieldsOf(r.text).csrf_token).toMatch(/^[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}$/);
  const csp = r.headers.get("content-security-policy")!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).not.toContain("script-src"); // the layout's <script> cannot run
  expect(csp).toContain("frame-ancestors 'none'");
  expect(r.headers.get("x-frame-options")).toBe("DENY");
});

test("other tenants keep the configured layout; a broken layout falls back to the built-in one", async () => {
  const plain = await authorize(clients.plain!);
  expect(plain.status).toBe(200);
  expect(plain.text).not.toContain("ACME");
  expect(plain.text).toContain("<h1>Sign in to plain &lt;img");
  const broken = await authorize(clients.broken!);
  expect(broken.status).toBe(200);
  expect(broken.text).toContain("<h1>Sign in to broken &lt;img");
});

test("behind https (public_url), the CSRF and session cookies are Secure, HttpOnly, SameSite=Lax", async () => {
  const page = await authorize(clients.plain!);
  const csrf = page.headers.getSetCookie().find((c) => c.startsWith("__Host-tessera_oidc_csrf="))!;
  expect(csrf).toMatch(/; Secure/);
  expect(csrf).toMatch(/HttpOnly/);
  const signedIn = await t.request("POST", "/0.1/oidc/authorize", {
    rawBody: new URLSearchParams({
      ...hiddenFieldsOf(page.text),
      username: "plain-user",
      password: "user-secret",
    }).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: csrf.split(";")[0]! },
  });
  expect(signedIn.status).toBe(303);
  expect(signedIn.headers.get("location")).toContain("iss=https%3A%2F%2Fauth.example.com%2F0.1%2Foidc");
  const session = signedIn.headers.getSetCookie().find((c) => c.startsWith("tessera_oidc_session="))!;
  expect(session).toMatch(/; Secure/);
  expect(session).toMatch(/HttpOnly/);
  expect(session).toMatch(/SameSite=Lax/);
});

test("the device verification page is a step of the same pages: the tenant's layout, the same CSRF cookie and header", async () => {
  const device = await t.request("POST", "/0.1/oidc/clients", {
    token: admins.acme!,
    body: {
      name: `acme tv ${HOSTILE}`,
      client_type: "public",
      grant_types: ["urn:ietf:params:oauth:grant-type:device_code"],
    },
  });
  const start = await t.request("POST", "/0.1/oidc/device_authorization", {
    rawBody: new URLSearchParams({ client_id: device.json.client_id }).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });
  // The code step knows no client yet: the configured layout.
  const codeStep = await t.request("GET", "/0.1/oidc/device");
  expect(codeStep.status).toBe(200);
  expect(codeStep.text).not.toContain("ACME");
  expect(codeStep.text).toContain("<main>\n<h1>Connect a device</h1>");
  // The request's step: the client's tenant's layout, escaped; the page's own CSRF field and cookie.
  const confirm = await t.request("GET", `/0.1/oidc/device?user_code=${start.json.user_code}`);
  expect(confirm.status).toBe(200);
  expect(confirm.text).toContain('<header id="brand">ACME sign-in for acme tv &lt;img');
  expect(confirm.text).toContain("<title>ACME · Connect a device</title>");
  expect(confirm.text).not.toContain("<img src=x");
  const csrf = confirm.headers.getSetCookie().find((c) => c.startsWith("__Host-tessera_oidc_csrf="))!;
  expect(csrf).toMatch(/; Path=\/;/);
  expect(csrf).toMatch(/; Secure/);
  expect(hiddenFieldsOf(confirm.text).csrf_token).toBe(csrf.split(";")[0]!.split("=")[1]!);
  const csp = confirm.headers.get("content-security-policy")!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("form-action 'self'");
  expect(confirm.headers.get("x-frame-options")).toBe("DENY");
});
