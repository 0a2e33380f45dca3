import { afterAll, beforeAll, expect, test } from "bun:test";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import { startTestIdp, type ResponseOptions, type TestIdp } from "../helpers/saml-idp.ts";
import {
  hideSignedInExtensions,
  injectSecondAssertion,
  nestSignedInEvil,
  tamperLogin,
} from "../helpers/saml-tamper.ts";
import {
  APP_URL,
  fullLogin,
  metadataFile,
  postAcs,
  samlTenant,
  samlUser,
  sendForm,
  startLogin,
  type SamlTenant,
} from "../helpers/saml-tenant.ts";
import { generateSelfSigned } from "../../src/services/integrations/saml/sp-key.ts";

const REFUSED = `${APP_URL}?login_failure_code=500`;

describeEachDb("SAML login through a real identity provider", (get) => {
  let idp: TestIdp;
  let admin: string;
  let acme: SamlTenant;
  let alice: string;
  beforeAll(async () => {
    const t = get();
    idp = await startTestIdp("acme");
    admin = await adminToken(t.app);
    acme = await samlTenant(t, admin, idp, "acme");
    alice = await samlUser(t, admin, idp, acme.tenant, "alice");
    await samlUser(t, admin, idp, acme.tenant, "bob");
  });
  afterAll(async () => idp?.stop());

  /** Starts a login, lets the IdP answer with `next`, optionally rewrites the response, posts it. */
  async function attempt(t: TestApp, next: ResponseOptions, rewrite?: (r: string) => string) {
    const sso = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: acme.domain } });
    idp.next = next;
    const post = await idp.browserLogin(sso.json.location, "alice", "alice-idp-pw");
    if (rewrite) post.SAMLResponse = rewrite(post.SAMLResponse);
    const acs = await postAcs(t, post);
    const token = await t.request("POST", "/0.1/token", { body: { saml_session_id: sso.json.saml_session_id } });
    return { acs, token, location: acs.headers.get("Location") };
  }

  test("SSO redirect → IdP login → signed response to the ACS → token for the user the assertion names", async () => {
    const t = get();
    const { acs, token } = await fullLogin(t, idp, acme.domain, "alice");
    expect(acs.status).toBe(302);
    expect(acs.headers.get("Location")).toBe(APP_URL);
    expect(token.status).toBe(200);
    expect(token.json.data.auth_id).toBe(alice);
    expect(token.json.data.metadata.tenant_uuid).toBe(acme.tenant);
  });

  test("a signed Response (assertion unsigned) and a doubly signed one are accepted", async () => {
    const t = get();
    for (const sign of ["response", "both"] as const) {
      const r = await attempt(t, { sign });
      expect(r.location).toBe(APP_URL);
      expect(r.token.status).toBe(200);
      expect(r.token.json.data.auth_id).toBe(alice);
    }
  });

  test("the AuthnRequest is signed with the SP key from the SP metadata (the IdP refuses it otherwise)", async () => {
    const t = get();
    const sso = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: acme.domain } });
    const url = new URL(sso.json.location);
    expect(url.origin + url.pathname).toBe(`${idp.url}/sso`);
    expect(url.searchParams.get("SigAlg")).toBe("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
    expect(sso.json.saml_session_id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const sig = url.searchParams.get("Signature")!;
    url.searchParams.set("Signature", `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`); // one character changed
    await expect(idp.browserLogin(url.toString(), "alice", "alice-idp-pw")).rejects.toThrow(/refused the AuthnRequest/);
  });

  const refusals: Array<[string, ResponseOptions, ((r: string) => string)?]> = [
    ["unsigned", { sign: "none" }],
    ["signed by a key not in the metadata", { signWith: undefined }],
    ["tampered after signing (another user's name)", {}, (r) => tamperLogin(r, "bob")],
    ["wrapped: a second unsigned assertion naming another user", {}, (r) => injectSecondAssertion(r, "bob")],
    [
      "wrapped: signed assertion hidden in Extensions, an unsigned one in its place",
      {},
      (r) => hideSignedInExtensions(r, "bob", false),
    ],
    [
      "wrapped: the same, the unsigned one reusing the signed one's ID",
      {},
      (r) => hideSignedInExtensions(r, "bob", true),
    ],
    ["wrapped: signed assertion nested inside an unsigned one", {}, (r) => nestSignedInEvil(r, "bob")],
    ["wrapped: response signed, assertion swapped", { sign: "response" }, (r) => injectSecondAssertion(r, "bob")],
    ["expired (NotOnOrAfter past, beyond the clock skew)", { notOnOrAfterIn: -120 }],
    ["not yet valid (NotBefore in an hour)", { notBeforeIn: 3600 }],
    ["for another audience", { audience: "https://other.example.com/sp" }],
    ["for another destination", { sign: "both", destination: "https://evil.example.com/0.1/saml/acs" }],
    ["for another recipient", { recipient: "https://evil.example.com/0.1/saml/acs" }],
    ["answering an unknown request (InResponseTo)", { inResponseTo: "id-0123456789abcdef0123456789abcdef" }],
    ["without the name attribute (an attribute literally `name` does not count)", { loginAttribute: "name" }],
  ];
  for (const [name, next, rewrite] of refusals) {
    test(`refused: ${name}`, async () => {
      const t = get();
      const opts = name.startsWith("signed by a key") ? { signWith: await generateSelfSigned("impostor") } : next;
      const r = await attempt(t, opts, rewrite);
      expect(r.acs.status).toBe(302);
      expect(r.location).toBe(REFUSED);
      expect(r.token.status).toBe(401);
      expect(r.token.json.error_id).toBe("authentication-failed");
    });
  }

  test("a response posted again is refused, and the SAML session id gives one token only", async () => {
    const t = get();
    const { sessionId, post } = await startLogin(t, idp, acme.domain, "alice");
    expect((await postAcs(t, post)).headers.get("Location")).toBe(APP_URL);
    const replay = await postAcs(t, post);
    expect(replay.status).toBe(404);
    expect(replay.json).toMatchObject({ error_id: "not-found", resource: "saml" });
    expect((await t.request("POST", "/0.1/token", { body: { saml_session_id: sessionId } })).status).toBe(200);
    expect((await t.request("POST", "/0.1/token", { body: { saml_session_id: sessionId } })).status).toBe(401);
    // the same response for another pending login (its RelayState): InResponseTo does not match
    const other = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: acme.domain } });
    const otherRelay = new URL(other.json.location).searchParams.get("RelayState")!;
    const moved = await postAcs(t, { ...post, RelayState: otherRelay });
    expect(moved.headers.get("Location")).toBe(REFUSED);
    expect(
      (await t.request("POST", "/0.1/token", { body: { saml_session_id: other.json.saml_session_id } })).status,
    ).toBe(401);
  });

  test("concurrent token requests with one SAML session id: exactly one token", async () => {
    const t = get();
    const { sessionId, post } = await startLogin(t, idp, acme.domain, "alice");
    await postAcs(t, post);
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => t.request("POST", "/0.1/token", { body: { saml_session_id: sessionId } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401]);
  });

  test("ACS: missing fields → 400; unknown RelayState → 404; unknown or made-up session ids → 401", async () => {
    const t = get();
    const missing = await t.request("POST", "/0.1/saml/acs", {
      rawBody: "RelayState=x",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(missing.status).toBe(400);
    expect(missing.json.details.SAMLResponse.constraint_id).toBe("required");
    const unknown = await postAcs(t, { action: "http://x/0.1/saml/acs", SAMLResponse: "PHNhbWw+", RelayState: "nope" });
    expect(unknown.status).toBe(404);
    for (const id of ["token-already-used", "AAAAAAAAAAAAAAAAAAAAAA"]) {
      expect((await t.request("POST", "/0.1/token", { body: { saml_session_id: id } })).status).toBe(401);
    }
    // a login whose IdP answer never came: its id is no token either
    const pending = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: acme.domain } });
    expect(
      (await t.request("POST", "/0.1/token", { body: { saml_session_id: pending.json.saml_session_id } })).status,
    ).toBe(401);
  });

  test("only users whose effective method is saml log in this way; SAML users keep no native password", async () => {
    const t = get();
    const carol = (
      await t.request("POST", "/0.1/users", {
        token: admin,
        tenant: acme.tenant,
        body: { username: "carol", password: "pw" },
      })
    ).json.uuid;
    idp.users.set("carol", { password: "carol-idp-pw", login: "carol" });
    expect((await fullLogin(t, idp, acme.domain, "carol")).token.status).toBe(401); // carol is native
    expect((await t.request("PUT", `/0.1/idp/saml/users/${carol}`, { token: admin, tenant: acme.tenant })).status).toBe(
      204,
    );
    expect((await fullLogin(t, idp, acme.domain, "carol")).token.status).toBe(200);
    const basic = await t.request("POST", "/0.1/token", {
      body: {},
      headers: { Authorization: `Basic ${btoa("carol:pw")}` },
    });
    expect(basic.status).toBe(401);
    const change = await t.request("PUT", `/0.1/users/${carol}/password`, {
      token: admin,
      body: { old_password: "pw", new_password: "x" },
    });
    expect(change.status).toBe(405);
    expect(change.json.error_id).toBe("password-managed-externally");
    const reset = await t.request("POST", `/0.1/users/password/reset?user_uuid=${carol}`, {
      token: admin,
      body: { password: "x" },
    });
    expect(reset.status).toBe(405);
    const idps = await t.request("GET", "/0.1/idp", { token: admin });
    expect(idps.json.items).toContain("saml");
  });

  test("an offline SAML login gets a refresh token that works for the SAML user", async () => {
    const t = get();
    const { token } = await fullLogin(t, idp, acme.domain, "alice", { access_type: "offline", client_id: "saml-app" });
    expect(token.status).toBe(200);
    const refreshed = await t.request("POST", "/0.1/token", {
      body: { refresh_token: token.json.data.refresh_token, client_id: "saml-app" },
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.json.data.auth_id).toBe(alice);
  });

  test("certificate rotation: after the metadata is replaced, the old key's signatures are refused", async () => {
    const t = get();
    const oldKeys = idp.keys;
    await idp.rotateKey();
    // the IdP signs with its new key before the administrator uploaded the new metadata: refused
    expect((await attempt(t, {})).location).toBe(REFUSED);
    const put = await sendForm(
      t,
      "PUT",
      "/0.1/backends/saml",
      { metadata: metadataFile(idp.metadata()) },
      { token: admin, tenant: acme.tenant },
    );
    expect(put.status).toBe(204);
    const now = await attempt(t, {});
    expect(now.location).toBe(APP_URL);
    expect(now.token.status).toBe(200);
    const old = await attempt(t, { signWith: oldKeys });
    expect(old.location).toBe(REFUSED);
    expect(old.token.status).toBe(401);
  });
});
