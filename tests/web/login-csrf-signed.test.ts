// Login CSRF on the hosted pages: the double-submit token is `{random}.{HMAC}` under a key only the
// service holds, so a cookie+field pair planted by someone without it is refused (whoever can set a
// cookie for the host no longer chooses the pair); behind https the cookie is `__Host-` (Secure,
// Path=/, no Domain: a sibling subdomain or a plain-http answer cannot set it).
import { expect, test } from "bun:test";
import { createHmac, randomBytes } from "node:crypto";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { hiddenFieldsOf } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.csrf.test/cb";

async function authorizePath(t: TestApp): Promise<{ path: string; username: string }> {
  const tenant = await createTenantRow(t.app);
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  const client = await t.request("POST", "/0.1/oidc/clients", {
    token: admin,
    body: { name: "RP", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true },
  });
  expect(client.status).toBe(201);
  const username = `csrf-${crypto.randomUUID().slice(0, 8)}`;
  await createUserRow(t.app, { tenantUuid: tenant, username, password: "pw-secret" });
  const query = new URLSearchParams({
    client_id: client.json.client_id,
    redirect_uri: REDIRECT,
    response_type: "code",
    scope: "openid",
    state: "s1",
  });
  return { path: `/0.1/oidc/authorize?${query}`, username };
}

/** The sign-in form posted with this cookie and fields. */
const postSignIn = (t: TestApp, cookie: string, fields: Record<string, string>) =>
  t.request("POST", "/0.1/oidc/authorize", {
    rawBody: new URLSearchParams(fields).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: cookie },
  });

const cookieOf = (setCookie: string) => setCookie.split(";")[0]!;

describeEachDb("hosted pages: CSRF tokens are minted by the service", (get) => {
  test("a planted cookie+field pair made without the service's key is refused; the minted one signs in", async () => {
    const t = get();
    const { path, username } = await authorizePath(t);
    const page = await t.request("GET", path);
    expect(page.status).toBe(200);
    const fields = { ...hiddenFieldsOf(page.text), username, password: "pw-secret" };
    const setCookie = page.headers.getSetCookie().find((c) => c.startsWith("tessera_oidc_csrf="))!;
    expect(setCookie).toBeDefined();
    // The attacker's own pair, in every shape: a bare random value (the former format), and one
    // "signed" with a key of its own choosing.
    const random = randomBytes(32).toString("base64url");
    const ownMac = createHmac("sha256", randomBytes(32)).update(`hosted-page-csrf\n${random}`).digest("base64url");
    for (const planted of [random, `${random}.${ownMac}`]) {
      const r = await postSignIn(t, `tessera_oidc_csrf=${planted}`, { ...fields, csrf_token: planted });
      expect([r.status, r.headers.get("location")]).toEqual([400, null]);
      expect(r.text).toContain("did not come from this site");
    }
    const ok = await postSignIn(t, cookieOf(setCookie), fields);
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toStartWith(`${REDIRECT}?code=`);
  });
});

describeEachDb(
  "hosted pages behind https: the CSRF cookie is __Host-",
  (get) => {
    test("the cookie is __Host-tessera_oidc_csrf, Secure, Path=/, no Domain; the unprefixed one is ignored", async () => {
      const t = get();
      const { path, username } = await authorizePath(t);
      const page = await t.request("GET", path);
      expect(page.status).toBe(200);
      const setCookie = page.headers.getSetCookie().find((c) => c.includes("tessera_oidc_csrf="))!;
      expect(setCookie).toStartWith("__Host-tessera_oidc_csrf=");
      expect(setCookie).toContain("Secure");
      expect(setCookie).toContain("Path=/;");
      expect(setCookie.toLowerCase()).not.toContain("domain=");
      const fields = { ...hiddenFieldsOf(page.text), username, password: "pw-secret" };
      // The same minted value under the unprefixed name (which a subdomain could set) is not read.
      const value = cookieOf(setCookie).slice("__Host-tessera_oidc_csrf=".length);
      expect((await postSignIn(t, `tessera_oidc_csrf=${value}`, fields)).status).toBe(400);
      const ok = await postSignIn(t, cookieOf(setCookie), fields);
      expect(ok.status).toBe(303);
    });
  },
  { config: { public_url: "https://auth.csrf.test" } },
);
