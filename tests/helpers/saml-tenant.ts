// Test wiring of a tenant to a test IdP through the public API: the tenant and its domain, the
// SAML configuration (multipart, with the IdP's metadata file), the SP metadata handed back to the
// IdP, and users whose authentication method is `saml`. Then the whole browser flow.
import { expect } from "bun:test";
import type { TestApp } from "./app.ts";
import type { AcsPost, TestIdp } from "./saml-idp.ts";

export const APP_URL = "https://app.example.com/after-login";

/** Sends an HTML form (multipart) to the in-process app. */
export async function sendForm(
  t: TestApp,
  method: string,
  path: string,
  fields: Record<string, string | Blob>,
  opts: { token?: string; tenant?: string } = {},
) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const headers: Record<string, string> = {};
  if (opts.token) headers["X-Auth-Token"] = opts.token;
  if (opts.tenant) headers["Wazo-Tenant"] = opts.tenant;
  const res = await t.http.request(path, { method, headers, body: form }, { remoteAddr: "127.0.0.1" });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export const metadataFile = (xml: string) => new File([xml], "idp-metadata.xml", { type: "application/xml" });

export interface SamlTenant {
  tenant: string;
  domain: string;
  domainUuid: string;
  acsUrl: string;
  entityId: string;
}

/** A tenant with a domain, configured for `idp`, with the IdP told about Tessera's SP metadata. */
export async function samlTenant(t: TestApp, admin: string, idp: TestIdp, name: string): Promise<SamlTenant> {
  const domain = `${name}.example.com`;
  const created = await t.request("POST", "/0.1/tenants", { token: admin, body: { name, domain_names: [domain] } });
  expect(created.status).toBe(200);
  const tenant = created.json.uuid as string;
  const domains = await t.request("GET", `/0.1/tenants/${tenant}/domains`, { token: admin });
  const domainUuid = domains.json.items[0].uuid as string;
  const acsUrl = `https://${name}.tessera.test/0.1/saml/acs`;
  const entityId = `https://${name}.tessera.test/saml/sp`;
  const r = await sendForm(
    t,
    "POST",
    "/0.1/backends/saml",
    { domain_uuid: domainUuid, entity_id: entityId, acs_url: acsUrl, metadata: metadataFile(idp.metadata()) },
    { token: admin, tenant },
  );
  expect(r.status).toBe(200);
  const sp = await t.request("GET", "/0.1/backends/saml/sp_metadata", { token: admin, tenant });
  expect(sp.status).toBe(200);
  idp.spMetadata = sp.text;
  return { tenant, domain, domainUuid, acsUrl, entityId };
}

/** A user of the tenant whose authentication method is `saml`, known to the IdP as `login`. */
export async function samlUser(
  t: TestApp,
  admin: string,
  idp: TestIdp,
  tenant: string,
  username: string,
): Promise<string> {
  const r = await t.request("POST", "/0.1/users", {
    token: admin,
    tenant,
    body: { username, password: "native-pw", email_address: `${username}@mail.test` },
  });
  expect(r.status).toBe(200);
  expect((await t.request("PUT", `/0.1/idp/saml/users/${r.json.uuid}`, { token: admin, tenant })).status).toBe(204);
  idp.users.set(username, { password: `${username}-idp-pw`, login: username });
  return r.json.uuid as string;
}

/** The browser posting the IdP's form to Tessera's ACS (in-process: the path of the form's action). */
export async function postAcs(t: TestApp, post: AcsPost) {
  return t.request("POST", new URL(post.action).pathname, {
    rawBody: new URLSearchParams({ SAMLResponse: post.SAMLResponse, RelayState: post.RelayState }).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });
}

/** POST /saml/sso, then the IdP login page: the form the IdP gives the browser for the ACS. */
export async function startLogin(t: TestApp, idp: TestIdp, domain: string, username: string) {
  const sso = await t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain } });
  expect(sso.status).toBe(200);
  const post = await idp.browserLogin(sso.json.location, username, idp.users.get(username)!.password);
  return { sessionId: sso.json.saml_session_id as string, location: sso.json.location as string, post };
}

/** The whole flow; returns the ACS answer and the token answer. */
export async function fullLogin(
  t: TestApp,
  idp: TestIdp,
  domain: string,
  username: string,
  tokenBody: Record<string, unknown> = {},
) {
  const { sessionId, post } = await startLogin(t, idp, domain, username);
  const acs = await postAcs(t, post);
  const token = await t.request("POST", "/0.1/token", { body: { saml_session_id: sessionId, ...tokenBody } });
  return { sessionId, post, acs, token };
}
