// Who may introspect what (RFC 7662 §4): a first-party client every token of its tenant and below,
// any other client only the access tokens issued to it — on the full route and on the shortcut
// before the router (http/fast-introspection.ts), whose memo of the last answer must not outlive a
// client's change of reach. A refusal is `{"active": false}`, the unknown token's answer (§2.2).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { getTableName, type Table } from "drizzle-orm";
import * as oidc from "openid-client";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { browserSignIn, insecure, serveApp, type ServedApp } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";

interface Registered {
  client_id: string;
  client_secret: string;
}

describeEachDb("OpenID Connect introspection reach", (get) => {
  let served: ServedApp;
  let issuer: URL;
  let tenant: string;
  let sub: string;
  let admin: string;
  let subAdmin: string;
  /** First-party: the operator's resource server. */
  let firstParty: Registered;
  /** Third-party: someone else's service with its own client credentials. */
  let partner: Registered;
  let partner2: Registered;
  let subFirstParty: Registered;
  let foreignFirstParty: Registered;
  let web: Registered;
  const tokens: Record<string, string> = {};

  const register = async (token: string, body: Record<string, unknown>): Promise<Registered> => {
    const r = await get().request("POST", "/0.1/oidc/clients", {
      token,
      body: {
        name: "rs",
        client_type: "confidential",
        redirect_uris: [],
        grant_types: ["client_credentials"],
        ...body,
      },
    });
    if (r.status !== 201) throw new Error(r.text);
    return r.json;
  };
  const basic = (c: Registered) => `Basic ${btoa(`${c.client_id}:${c.client_secret}`)}`;
  /** `token=` alone with Basic: the shortcut; with another field: the full route. */
  const introspect = async (c: Registered, token: string, via: "shortcut" | "route") => {
    const r = await fetch(`${issuer.href}/introspect`, {
      method: "POST",
      body: via === "shortcut" ? `token=${token}` : `token=${token}&token_type_hint=access_token&x=1`,
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: basic(c) },
    });
    expect(r.status).toBe(200);
    return (await r.json()) as Record<string, unknown>;
  };
  const clientCredentials = async (c: Registered) => {
    const r = await fetch(`${issuer.href}/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "client_credentials" }),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: basic(c) },
    });
    if (r.status !== 200) throw new Error(await r.text());
    return ((await r.json()) as { access_token: string }).access_token;
  };

  beforeAll(async () => {
    const t = get();
    served = serveApp(t);
    issuer = new URL(`${served.url}/0.1/oidc`);
    tenant = await createTenantRow(t.app);
    sub = await createTenantRow(t.app, { parentUuid: tenant });
    const elsewhere = await createTenantRow(t.app);
    const adminToken = await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant });
    admin = adminToken.token;
    subAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: sub })).token;
    const foreignAdmin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: elsewhere })).token;
    firstParty = await register(admin, { name: "Operator RS", first_party: true });
    partner = await register(admin, { name: "Partner" });
    partner2 = await register(admin, { name: "Partner 2" });
    subFirstParty = await register(subAdmin, { name: "Sub RS", first_party: true });
    foreignFirstParty = await register(foreignAdmin, { name: "Foreign RS", first_party: true });
    web = await register(admin, {
      name: "Web",
      first_party: true,
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code"],
    });
    await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
    // alice's sign-in through the web client: a user's access token issued to `web`.
    const config = await oidc.discovery(
      issuer,
      web.client_id,
      undefined,
      oidc.ClientSecretBasic(web.client_secret),
      insecure,
    );
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: "openid",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const back = await browserSignIn(served.url, url.toString(), "alice", "alice-secret");
    tokens.web = (await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier })).access_token;
    tokens.partner = await clientCredentials(partner);
    tokens.firstParty = await clientCredentials(firstParty);
    tokens.admin = admin;
    tokens.subAdmin = subAdmin;
  });
  afterAll(() => served?.stop());

  for (const via of ["shortcut", "route"] as const) {
    test(`${via}: a third-party client introspects only its own tokens; every other one is {active: false}`, async () => {
      expect(await introspect(partner, tokens.partner!, via)).toMatchObject({
        active: true,
        client_id: partner.client_id,
        sub: partner.client_id,
        tenant_uuid: tenant,
      });
      // Another client's user token, another client's own token, administrators' tokens: nothing.
      for (const name of ["web", "firstParty", "admin", "subAdmin"])
        expect([name, await introspect(partner, tokens[name]!, via)]).toEqual([name, { active: false }]);
      // The same client's neighbour learns nothing of the partner's token either.
      expect(await introspect(partner2, tokens.partner!, via)).toEqual({ active: false });
    });

    test(`${via}: a first-party client keeps its reach: its tenant and below, never above or beside`, async () => {
      for (const name of ["web", "partner", "firstParty", "admin", "subAdmin"])
        expect([name, (await introspect(firstParty, tokens[name]!, via)).active]).toEqual([name, true]);
      expect(await introspect(firstParty, tokens.web!, via)).toMatchObject({
        client_id: web.client_id,
        scope: "openid",
      });
      // A sub-tenant's first-party client: its own tenant's tokens only, not its parent's.
      expect((await introspect(subFirstParty, tokens.subAdmin!, via)).active).toBe(true);
      for (const name of ["web", "partner", "admin"])
        expect([name, await introspect(subFirstParty, tokens[name]!, via)]).toEqual([name, { active: false }]);
      // Another tenant's first-party client: nothing of this tenant.
      for (const name of ["web", "partner", "admin", "subAdmin"])
        expect([name, await introspect(foreignFirstParty, tokens[name]!, via)]).toEqual([name, { active: false }]);
    });
  }

  test("the shortcut's memo of an answer does not outlive the client's reach: made third-party, it is refused at once", async () => {
    const t = get();
    const rs = await register(admin, { name: "Was first-party", first_party: true });
    for (let i = 0; i < 2; i++) expect((await introspect(rs, tokens.web!, "shortcut")).active).toBe(true);
    const put = await t.request("PUT", `/0.1/oidc/clients/${rs.client_id}`, {
      token: admin,
      body: { name: "Now third-party", redirect_uris: [], grant_types: ["client_credentials"], first_party: false },
    });
    expect(put.status).toBe(204);
    expect(await introspect(rs, tokens.web!, "shortcut")).toEqual({ active: false });
    expect(await introspect(rs, tokens.web!, "route")).toEqual({ active: false });
  });

  test("a third-party client refused on the shortcut: no database read (the grant is cached on the token)", async () => {
    const t = get();
    // Warm: the client, its verified header and the token's grant are in memory.
    expect(await introspect(partner, tokens.web!, "shortcut")).toEqual({ active: false });
    expect(await introspect(partner, tokens.partner!, "shortcut")).toMatchObject({ active: true });
    // Reads of what introspection looks at (clients, tokens, grants, refresh tokens, tenants), by
    // table: anything else the app may read meanwhile (a background job) is not this request's.
    type Query = { from: (table: Table, ...rest: unknown[]) => unknown };
    const db = t.app.db as unknown as { select: (...a: unknown[]) => Query };
    const select = db.select;
    const read: string[] = [];
    db.select = (...a: unknown[]) => {
      const query = select.apply(t.app.db, a);
      const from = query.from.bind(query);
      query.from = (table, ...rest) => {
        read.push(getTableName(table));
        return from(table, ...rest);
      };
      return query;
    };
    try {
      for (let i = 0; i < 3; i++) expect(await introspect(partner, tokens.web!, "shortcut")).toEqual({ active: false });
      expect(await introspect(partner, tokens.partner!, "shortcut")).toMatchObject({ active: true });
    } finally {
      db.select = select;
    }
    expect(read.filter((name) => /oidc|token|tenant|session/.test(name))).toEqual([]);
  });
});
