// Authorization by construction: matrices driven by the route table itself (every RouteGroup spec),
// so a route added later is enumerated without anyone writing its test.
//  - authentication: no token, garbage token, a token with no ACL, a token with a neighbouring ACL
//  - isolation: an `auth.#` administrator aims at another tenant's resources (sibling, parent) by
//    every identifier a route takes; every answer is a denial and the database is unchanged
//  - canonical ACL: upper-case uuids and re-cased slugs against a matching deny entry stay denied
//  - contract: every 2xx JSON answer (every GET, every write of the grant-rule sweep) matches the schema the
//    OpenAPI document gives it (tests/helpers/response-contract.ts)
//  - contract: every PUT answers 204 with no body (D3 of docs/wazo-auth-differences.md); every DELETE of something absent 204 (D4)
//  - grant rule: every writing route, aimed by an `auth.#` administrator at its own tenant's users,
//    groups and policies, leaves no user with an entry the administrator could not have granted
import { expect, test } from "bun:test";
import { upstreamOidcProviders } from "../../src/db/schema.ts";
import { grantCheck } from "../../src/domain/acl-grant.ts";
import type { RouteSpec } from "../../src/http/route.ts";
import { describeEachDb, type TestApp, type TestResponse } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";
import { contractViolations } from "../helpers/response-contract.ts";
import { aclSnapshot, ungranted } from "../helpers/grant.ts";
import {
  allSpecs,
  fillPath,
  placeholders,
  queryNames,
  routeName,
  sampleBody,
  snapshotDatabase,
} from "../helpers/route-table.ts";
import { basicAuth } from "../helpers/service-process.ts";
import { softAuthenticator } from "../helpers/soft-authenticator.ts";

const uniq = () => crypto.randomUUID().slice(0, 8);

/** Every resource a tenant can own, made through the API by the master administrator. */
interface World {
  tenant: string;
  user: string;
  email: string;
  emailAddress: string;
  session: string;
  clientId: string;
  group: string;
  policy: string;
  policySlug: string;
  oidcClient: string;
  oidcResource: string;
  passkey: string;
  initialAccessToken: string;
  oidcBackend: string;
  webhook: string;
  delivery: string;
  scimToken: string;
}

async function makeWorld(t: TestApp, master: string, tenant: string): Promise<World> {
  const h = { token: master, tenant };
  const ok = (r: TestResponse, what: string) => {
    if (r.status >= 300) throw new Error(`world: ${what} → ${r.status} ${r.text}`);
    return r;
  };
  const username = `u${uniq()}`;
  const user = ok(
    await t.request("POST", "/0.1/users", {
      ...h,
      body: { username, password: "pw-secret", email_address: `${username}@example.org` },
    }),
    "user",
  ).json;
  const clientId = `client-${username}`;
  const login = ok(
    await t.request("POST", "/0.1/token", {
      body: { access_type: "offline", client_id: clientId },
      headers: basicAuth(username, "pw-secret"),
    }),
    "login",
  ).json;
  const group = ok(await t.request("POST", "/0.1/groups", { ...h, body: { name: `g${uniq()}` } }), "group").json.uuid;
  const policy = ok(
    await t.request("POST", "/0.1/policies", { ...h, body: { name: `p${uniq()}`, acl: ["auth.users.read"] } }),
    "policy",
  ).json;
  ok(await t.request("PUT", `/0.1/groups/${group}/users/${user.uuid}`, h), "member");
  ok(await t.request("PUT", `/0.1/groups/${group}/policies/${policy.uuid}`, h), "group policy");
  ok(await t.request("PUT", `/0.1/users/${user.uuid}/policies/${policy.uuid}`, h), "user policy");
  ok(await t.request("POST", `/0.1/users/${user.uuid}/external/mobile`, { ...h, body: { token: "fcm" } }), "mobile");
  ok(await t.request("POST", "/0.1/external/mobile/config", { ...h, body: { fcm_sender_id: "1" } }), "mobile config");
  const oidcClient = ok(await t.request("POST", "/0.1/oidc/clients", { ...h, body: OIDC_CLIENT }), "oidc client").json
    .client_id;
  const oidcResource = ok(
    await t.request("POST", "/0.1/oidc/resources", {
      ...h,
      body: { ...OIDC_RESOURCE, identifier: `https://${uniq()}.example.com` },
    }),
    "oidc resource",
  ).json.uuid;
  const initialAccessToken = ok(await t.request("POST", "/0.1/oidc/initial-access-tokens", { ...h, body: {} }), "iat")
    .json.uuid;
  const webhook = ok(await t.request("POST", "/0.1/webhooks", { ...h, body: WEBHOOK }), "webhook").json.uuid;
  const delivery = ok(await t.request("POST", `/0.1/webhooks/${webhook}/ping`, h), "webhook ping").json.uuid;
  const own = {
    token: (await tokenFor(t.app, { acl: ["auth.users.me.mfa.#"], userUuid: user.uuid, tenantUuid: tenant })).token,
  };
  const ceremony = ok(await t.request("POST", "/0.1/users/me/mfa/passkeys/registration", own), "passkey options").json;
  const credential = softAuthenticator().register(ceremony.options, "http://localhost");
  const passkey = ok(
    await t.request("POST", "/0.1/users/me/mfa/passkeys", {
      ...own,
      body: { challenge_id: ceremony.challenge_id, name: "Key", credential },
    }),
    "passkey",
  ).json.uuid;
  // An upstream OpenID provider, stored directly: creating one through the API fetches its issuer's discovery.
  const [oidcBackend] = await t.app.db
    .insert(upstreamOidcProviders)
    .values({
      tenantUuid: tenant,
      name: `idp-${uniq()}`,
      displayName: "IdP",
      issuer: "https://idp.example.com",
      clientId: "tessera",
      clientSecret: "secret",
      scopes: ["openid"],
      provisioning: "link",
      claimMapping: {},
    })
    .returning();
  const scimToken = ok(await t.request("POST", "/0.1/scim/tokens", { ...h, body: { name: "directory" } }), "scim token")
    .json.uuid;
  return {
    oidcBackend: oidcBackend!.uuid,
    oidcClient,
    oidcResource,
    passkey,
    initialAccessToken,
    webhook,
    delivery,
    scimToken,
    tenant,
    user: user.uuid,
    email: user.emails[0].uuid,
    emailAddress: `${username}@example.org`,
    session: login.data.session_uuid,
    clientId,
    group,
    policy: policy.uuid,
    policySlug: policy.slug,
  };
}

/** Path and query parameters that name a resource of a tenant, filled from a world. */
function identifierValues(w: World): Record<string, string> {
  return {
    user_uuid: w.user,
    group_uuid: w.group,
    policy: w.policy,
    tenant_uuid: w.tenant,
    parent_tenant_uuid: w.tenant,
    session_uuid: w.session,
    email_uuid: w.email,
    client_id: w.clientId,
    oidc_client_id: w.oidcClient,
    oidc_resource_uuid: w.oidcResource,
    passkey_uuid: w.passkey,
    initial_access_token_uuid: w.initialAccessToken,
    oidc_backend_uuid: w.oidcBackend,
    webhook_uuid: w.webhook,
    delivery_uuid: w.delivery,
    scim_token_uuid: w.scimToken,
  };
}
const IDENTIFIERS = Object.keys(identifierValues({} as World));
/** Parameters that name a kind of thing, not a tenant's resource. */
const KIND_VALUES: Record<string, string> = { auth_type: "mobile", idp_type: "native", access: "auth.users.read" };

const authenticated = (s: RouteSpec) => s.acl !== undefined;
const paramNames = (s: RouteSpec) => [...placeholders(s.path), ...queryNames(s).filter((q) => IDENTIFIERS.includes(q))];

function request(
  t: TestApp,
  spec: RouteSpec,
  values: Record<string, string>,
  opts: { token?: string; tenant?: string; world?: World },
) {
  const query = queryNames(spec)
    .filter((q) => values[q] !== undefined)
    .map((q) => `${q}=${encodeURIComponent(values[q]!)}`);
  const path = fillPath(spec, values) + (query.length ? `?${query.join("&")}` : "");
  const overrides = Object.fromEntries(Object.entries(BODIES).map(([k, f]) => [k, f(opts.world)]));
  return t.request(spec.method.toUpperCase(), path, {
    token: opts.token,
    tenant: opts.tenant,
    body: sampleBody(spec, overrides),
  });
}

const OIDC_CLIENT = { name: "rp", client_type: "confidential", redirect_uris: ["https://rp.example.com/cb"] };
const OIDC_RESOURCE = { identifier: "https://api.example.com", acl: ["calld.#"], token_format: "jwt" };
const WEBHOOK = { url: "https://hooks.example.com/tessera", events: ["auth_user_*"] };

/** Bodies the schema alone cannot make valid (or that should keep the world as it is). */
const BODIES: Record<string, (w?: World) => unknown> = {
  "PUT /users/{user_uuid}/emails": (w) => ({ emails: w ? [{ address: w.emailAddress, main: true }] : [] }),
  "PUT /admin/users/{user_uuid}/emails": (w) => ({
    emails: w ? [{ address: w.emailAddress, main: true, confirmed: false }] : [],
  }),
  "PUT /users/{user_uuid}/password": () => ({ old_password: "pw-secret", new_password: "pw-secret" }),
  "PATCH /config": () => [{ op: "replace", path: "/debug", value: false }],
  "PUT /oidc/clients/{oidc_client_id}": () => OIDC_CLIENT,
  // Its own identifier kept (another resource of the tenant may hold the sample's).
  "PUT /oidc/resources/{oidc_resource_uuid}": (w) => ({
    ...OIDC_RESOURCE,
    identifier: `https://${w?.oidcResource}.example.com`,
  }),
  // The same issuer: no discovery request on PUT.
  "PUT /backends/oidc/{oidc_backend_uuid}": () => ({
    name: "idp",
    display_name: "IdP",
    issuer: "https://idp.example.com",
    client_id: "tessera",
  }),
  "PUT /webhooks/{webhook_uuid}": () => WEBHOOK,
  "PUT /backends/ldap": () => ({
    host: "ldap.example.com",
    port: 389,
    user_base_dn: "dc=example,dc=com",
    user_login_attribute: "uid",
    user_email_attribute: "mail",
  }),
};
/** PUTs whose body is a multipart form with a file (IdP metadata) the schema sampler cannot make,
 * on a configuration the world does not have: their PUT contract is tested in tests/api/saml-config.test.ts. */
const FORM_PUTS = ["PUT /backends/saml"];
/** Answers of wazo-auth kept on purpose: logout answers 200 `{"data": {"message": "success"}}`. */
const LEGACY_DELETE = ["DELETE /token/{token}"];
/** The OAuth door's PUT and DELETE answer as their RFC says (RFC 7592 §2.2: 200 with the metadata; §2.3: 401 for a
 * client the token does not open); the SCIM door as RFC 7644 says (PUT 200 with the resource, DELETE of an absent one
 * 404: tests/scim/). */
const wazoContract = (s: RouteSpec) => s.door !== "oauth" && s.door !== "scim";

describeEachDb("route matrices", (get) => {
  let master: string;
  let worlds: { master: World; a: World; a1: World; b: World };
  let admins: { a: string; a1: string };
  let specs: RouteSpec[];

  test("setup: master → A → A1 and sibling B, each with one of everything", async () => {
    const t = get();
    specs = allSpecs(t.app);
    master = (await tokenFor(t.app, { acl: ["#"] })).token;
    const a = await createTenantRow(t.app);
    const a1 = await createTenantRow(t.app, { parentUuid: a });
    const b = await createTenantRow(t.app);
    worlds = {
      master: await makeWorld(t, master, t.app.topTenantUuid),
      a: await makeWorld(t, master, a),
      a1: await makeWorld(t, master, a1),
      b: await makeWorld(t, master, b),
    };
    admins = {
      a: (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: a })).token,
      a1: (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: a1 })).token,
    };
    expect(specs.length).toBeGreaterThan(50);
  });

  test("authentication: no token 401, garbage 401, no ACL 403, neighbouring ACL 403", async () => {
    const t = get();
    const values: Record<string, string> = { ...identifierValues(worlds.master), ...KIND_VALUES };
    const noAcl = (await tokenFor(t.app, { acl: [] })).token;
    const failures: string[] = [];
    for (const spec of specs.filter(authenticated)) {
      const required = spec.acl!.replace(/\{(\w+)\}/g, (_m, n: string) => values[n]!.replaceAll(".", "_"));
      const segments = required.split(".");
      const last = segments.pop()!;
      const neighbour = [
        ...segments,
        { read: "update", update: "read", create: "delete", delete: "create" }[last] ?? `${last}x`,
      ].join(".");
      const neighbourToken = (await tokenFor(t.app, { acl: [neighbour, `${segments.join(".")}.other.${last}`] })).token;
      for (const [label, token, want] of [
        ["none", undefined, 401],
        ["garbage", "not-a-token", 401],
        ["no ACL", noAcl, 403],
        ["neighbour", neighbourToken, 403],
      ] as const) {
        const r = await request(t, spec, values, { token });
        if (r.status !== want || typeof r.json?.error_id !== "string")
          failures.push(`${routeName(spec)} with ${label} token: ${r.status} ${r.text.slice(0, 80)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  test("isolation: another tenant's resources are neither seen nor changed; parent → child still works", async () => {
    const t = get();
    const before = await snapshotDatabase(t.app);
    const failures: string[] = [];
    const sweeps = [
      { who: "A", token: admins.a, own: worlds.a, victim: worlds.b },
      { who: "A", token: admins.a, own: worlds.a, victim: worlds.master },
      { who: "A1", token: admins.a1, own: worlds.a1, victim: worlds.a },
    ];
    for (const { who, token, own, victim } of sweeps) {
      for (const spec of specs.filter(authenticated)) {
        const names = paramNames(spec);
        const targets = names.filter((n) => n in identifierValues(victim));
        const values = { ...KIND_VALUES, ...identifierValues(victim), parent_tenant_uuid: own.tenant };
        const tries: Array<{ label: string; values: Record<string, string>; tenant?: string }> = [
          {
            label: "as itself, scoping the victim's tenant",
            values: { ...KIND_VALUES, ...identifierValues(own), parent_tenant_uuid: own.tenant },
            tenant: victim.tenant,
          },
        ];
        if (targets.length) tries.push({ label: "naming the victim's resources", values });
        if (names.includes("parent_tenant_uuid"))
          tries.push({
            label: "moving its own tenant under the victim",
            values: { ...values, tenant_uuid: own.tenant, parent_tenant_uuid: victim.tenant },
          });
        for (const attempt of tries) {
          const r = await request(t, spec, attempt.values, { token, tenant: attempt.tenant });
          const denied = [401, 403, 404].includes(r.status) || (spec.method === "delete" && r.status === 204);
          if (!denied)
            failures.push(`${who} → ${routeName(spec)} ${attempt.label}: ${r.status} ${r.text.slice(0, 100)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    const after = await snapshotDatabase(t.app);
    for (const table of Object.keys(before)) expect([table, after[table]]).toEqual([table, before[table]]);
    // the parent still reaches its child, with and without Wazo-Tenant
    expect((await t.request("GET", `/0.1/users/${worlds.a1.user}`, { token: admins.a })).status).toBe(200);
    const listed = await t.request("GET", "/0.1/users", { token: admins.a, tenant: worlds.a1.tenant });
    expect(listed.status).toBe(200);
    expect(listed.json.items.map((u: { uuid: string }) => u.uuid)).toContain(worlds.a1.user);
  }, 20_000); // every route swept twice: ~4 s on a loaded machine before the audit trail, which adds one insert per write

  test("canonical ACL: upper-case uuids and re-cased slugs do not slip past a deny entry", async () => {
    const t = get();
    const values: Record<string, string> = { ...identifierValues(worlds.master), ...KIND_VALUES };
    const failures: string[] = [];
    for (const spec of specs.filter((s) => authenticated(s) && placeholders(s.acl!).length > 0)) {
      const required = spec.acl!.replace(/\{(\w+)\}/g, (_m, n: string) => values[n]!.replaceAll(".", "_"));
      const token = (await tokenFor(t.app, { acl: ["#", `!${required}`] })).token;
      const upper = Object.fromEntries(
        Object.entries(values).map(([k, v]) => [k, k in KIND_VALUES || k === "client_id" ? v : v.toUpperCase()]),
      );
      const variants = [upper];
      if (placeholders(spec.path).includes("policy"))
        variants.push({ ...upper, policy: swapCase(worlds.master.policySlug) });
      for (const v of variants) {
        const r = await request(t, spec, v, { token });
        if (r.status !== 403)
          failures.push(`${routeName(spec)} with ${JSON.stringify(v.policy ?? v.user_uuid ?? "")}: ${r.status}`);
      }
    }
    expect(failures).toEqual([]);
  });

  test("contract: every GET answers JSON that matches its documented schema", async () => {
    const t = get();
    const values = { ...identifierValues(worlds.master), ...KIND_VALUES, token: master };
    const failures: string[] = [];
    let checked = 0;
    // Routes whose path takes something the world does not hold (an asset's name) are left to their own tests.
    const reachable = (s: RouteSpec) => placeholders(s.path).every((p) => p in values);
    for (const spec of specs.filter((s) => s.method === "get" && reachable(s))) {
      const r = await request(t, spec, values, { token: master, world: worlds.master });
      if (r.status >= 200 && r.status < 300) checked++;
      for (const v of contractViolations(spec, r)) failures.push(`${routeName(spec)} ${r.status}: ${v}`);
    }
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(30);
  });

  test("contract: every PUT answers 204 with an empty body; every DELETE of something absent 204", async () => {
    const t = get();
    const scratch = await createTenantRow(t.app);
    const w = await makeWorld(t, master, scratch);
    const child = await createTenantRow(t.app, { parentUuid: scratch });
    const failures: string[] = [];
    for (const spec of specs.filter(
      (s) => s.method === "put" && wazoContract(s) && !FORM_PUTS.includes(routeName(s)),
    )) {
      const values = {
        ...identifierValues(w),
        ...KIND_VALUES,
        access: "auth.users.create",
        tenant_uuid: child,
        parent_tenant_uuid: scratch,
      };
      const r = await request(t, spec, values, { token: master, tenant: scratch, world: w });
      if (r.status !== 204 || r.text !== "") failures.push(`${routeName(spec)}: ${r.status} ${r.text.slice(0, 100)}`);
    }
    const absent = {
      user_uuid: crypto.randomUUID(),
      group_uuid: crypto.randomUUID(),
      policy: crypto.randomUUID(),
      tenant_uuid: crypto.randomUUID(),
      session_uuid: crypto.randomUUID(),
      email_uuid: crypto.randomUUID(),
      client_id: `absent-${uniq()}`,
      oidc_client_id: crypto.randomUUID(),
      oidc_resource_uuid: crypto.randomUUID(),
      passkey_uuid: crypto.randomUUID(),
      initial_access_token_uuid: crypto.randomUUID(),
      oidc_backend_uuid: crypto.randomUUID(),
      webhook_uuid: crypto.randomUUID(),
      delivery_uuid: crypto.randomUUID(),
      scim_token_uuid: crypto.randomUUID(),
      token: crypto.randomUUID(),
      ...KIND_VALUES,
    };
    const fresh = await createTenantRow(t.app);
    for (const spec of specs.filter(
      (s) => s.method === "delete" && wazoContract(s) && !LEGACY_DELETE.includes(routeName(s)),
    )) {
      const r = await request(t, spec, absent, { token: master, tenant: fresh });
      if (r.status !== 204) failures.push(`${routeName(spec)} (absent): ${r.status} ${r.text.slice(0, 100)}`);
      // a sub-resource of an existing owner, deleted twice: the second time it is already gone
      if (placeholders(spec.path).length < 2) continue;
      for (const round of ["first", "again"]) {
        const again = await request(
          t,
          spec,
          { ...absent, user_uuid: w.user, group_uuid: w.group },
          { token: master, tenant: scratch },
        );
        if (again.status !== 204)
          failures.push(`${routeName(spec)} (${round}, existing owner): ${again.status} ${again.text.slice(0, 100)}`);
      }
    }
    expect(failures).toEqual([]);
  });
});

/** Routes of the grant-rule sweep in flight at once. */
const SWEEP_WIDTH = 4;

describeEachDb("route matrices: the grant rule", (get) => {
  test("no writing route lets an auth.# administrator give itself or a user of its tenant what it could not grant", async () => {
    const t = get();
    const master = (await tokenFor(t.app, { acl: ["#"] })).token;
    const failures: string[] = [];
    let refusals = 0;
    const sweep = async (spec: RouteSpec) => {
      // A fresh tenant for each route: a privileged group (and user) the administrator is not in,
      // whose policy also holds a deny entry that leaving it would lift.
      const tenant = await createTenantRow(t.app);
      const h = { token: master, tenant };
      const admin = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant });
      const w = await makeWorld(t, master, tenant);
      const policy = (
        await t.request("POST", "/0.1/policies", { ...h, body: { name: `root${uniq()}`, acl: ["#", "!calld.#"] } })
      ).json;
      await t.request("PUT", `/0.1/groups/${w.group}/policies/${policy.uuid}`, h);
      await t.request("PUT", `/0.1/users/${w.user}/policies/${policy.uuid}`, h);
      const rule = grantCheck(["auth.#"], { authId: admin.userUuid, sessionUuid: admin.sessionUuid });
      // aimed at itself (joining, attaching) and at the privileged user (leaving, detaching)
      for (const target of [admin.userUuid, w.user]) {
        const values = {
          ...identifierValues(w),
          ...KIND_VALUES,
          user_uuid: target,
          policy: policy.uuid,
          access: "#",
          parent_tenant_uuid: tenant,
        };
        const before = await aclSnapshot(t, [admin.userUuid, w.user]);
        const r = await request(t, spec, values, { token: admin.token, world: w });
        if (r.status === 403 && r.json?.details?.required_access) refusals++;
        for (const v of contractViolations(spec, r)) failures.push(`${routeName(spec)} ${r.status}: ${v}`);
        const after = await aclSnapshot(t, [admin.userUuid, w.user]);
        for (const u of [admin.userUuid, w.user]) {
          const bad = ungranted(rule, before.get(u)!, after.get(u)!);
          if (bad.length)
            failures.push(
              `${routeName(spec)} (${r.status}) gave ${u === admin.userUuid ? "the administrator" : "a user"} ${JSON.stringify(bad)}`,
            );
        }
      }
    };
    // Each route has a tenant and a world of its own, so routes are swept a few at a time: the
    // worlds (a dozen writes each) are most of the test's time, and they overlap.
    const writing = allSpecs(t.app).filter((s) => authenticated(s) && s.method !== "get");
    for (let i = 0; i < writing.length; i += SWEEP_WIDTH)
      await Promise.all(writing.slice(i, i + SWEEP_WIDTH).map(sweep));
    expect(failures).toEqual([]);
    expect(refusals).toBeGreaterThanOrEqual(8); // the routes that change ACLs refused, naming the entry
    // ~35 s alone on the 2-core machine with every writing route (2026-11-28); beside the rest of the
    // suite's workers it has taken past 120 s. A bound, not a timing.
  }, 300_000);
});

function swapCase(s: string): string {
  return [...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("");
}
