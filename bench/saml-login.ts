// What a SAML login costs Tessera, in process on a fresh PGlite database, against the test IdP of
// tests/helpers/saml-idp.ts (a real samlify IdP over HTTP): the median time of each step Tessera
// serves — POST /saml/sso (signed AuthnRequest), POST /saml/acs (signature and assertion checks),
// POST /token with the saml_session_id — over N logins. The IdP's own time is not counted.
// Usage: npx bun bench/saml-login.ts [logins]
import { createTestApp } from "../tests/helpers/app.ts";
import { adminToken } from "../tests/helpers/fixtures.ts";
import { startTestIdp } from "../tests/helpers/saml-idp.ts";
import { APP_URL, postAcs, samlTenant, samlUser } from "../tests/helpers/saml-tenant.ts";

const logins = Number(process.argv[2] ?? 30);
const t = await createTestApp("pglite");
const idp = await startTestIdp("bench");
const admin = await adminToken(t.app);
const tenant = await samlTenant(t, admin, idp, "bench");
await samlUser(t, admin, idp, tenant.tenant, "alice");

const steps = { sso: [] as number[], acs: [] as number[], token: [] as number[] };
const timed = async <T>(list: number[], fn: () => Promise<T>) => {
  const started = performance.now();
  const out = await fn();
  list.push(performance.now() - started);
  return out;
};
for (let i = 0; i < logins + 3; i++) {
  const warm = i < 3;
  const sink = { sso: [] as number[], acs: [] as number[], token: [] as number[] };
  const into = warm ? sink : steps;
  const sso = await timed(into.sso, () =>
    t.request("POST", "/0.1/saml/sso", { body: { redirect_url: APP_URL, domain: tenant.domain } }),
  );
  const post = await idp.browserLogin(sso.json.location, "alice", "alice-idp-pw");
  const acs = await timed(into.acs, () => postAcs(t, post));
  if (acs.headers.get("Location") !== APP_URL) throw new Error("login refused");
  const token = await timed(into.token, () =>
    t.request("POST", "/0.1/token", { body: { saml_session_id: sso.json.saml_session_id } }),
  );
  if (token.status !== 200) throw new Error(`token: ${token.status}`);
}
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1);
console.log(`| step (median of ${logins}) | ms |\n|---|---:|`);
for (const [name, xs] of Object.entries(steps)) console.log(`| ${name} | ${median(xs)} |`);
await idp.stop();
await t.close();
