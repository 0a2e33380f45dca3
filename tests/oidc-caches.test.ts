// The OpenID Connect provider's copies in memory and its client credentials grant (issue 39): the
// JWK Set served from memory with a strong ETag (304 on If-None-Match, RFC 9110 §13.1.2) and dropped
// by a rotation on any instance; the client read for client authentication dropped on every
// instance when the client changes or goes (a deleted client's secret stops working at once); the
// client credentials grant written in one statement, all or nothing, still audited and revocable.
import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { openDatabase } from "../src/db/index.ts";
import { auditEntries, eventOutbox, oidcAccessTokens, oidcClients, sessions, tokens } from "../src/db/schema.ts";
import { clientForAuthentication, type ClientRow } from "../src/services/oidc/clients.ts";
import { clientCredentialsToken } from "../src/services/oidc/grants/client-credentials.ts";
import { cachedJwks, rotateSigningKeys } from "../src/services/oidc/keys.ts";
import { authenticateClient } from "../src/services/oidc/token-endpoint.ts";
import { createTestApp, describeEachDb, type TestApp } from "./helpers/app.ts";
import { adminToken } from "./helpers/fixtures.ts";
import { scratchDatabase } from "./helpers/scratch-db.ts";
import { until } from "./helpers/wait.ts";

interface Registered {
  client_id: string;
  client_secret: string;
}

async function registerService(t: TestApp, admin: string): Promise<Registered> {
  const r = await t.request("POST", "/0.1/oidc/clients", {
    token: admin,
    body: {
      name: "service",
      client_type: "confidential",
      redirect_uris: [],
      grant_types: ["client_credentials"],
      acl: ["confd.users.read"],
      first_party: true,
    },
  });
  expect(r.status).toBe(201);
  return r.json as Registered;
}

const basic = (c: Registered) => `Basic ${btoa(`${c.client_id}:${c.client_secret}`)}`;
const ORIGIN = { userAgent: "tests", remoteAddr: "127.0.0.1", forwarded: false };

function clientCredentials(t: TestApp, c: Registered) {
  return t.request("POST", "/0.1/oidc/token", {
    rawBody: "grant_type=client_credentials",
    headers: { Authorization: basic(c), "Content-Type": "application/x-www-form-urlencoded" },
  });
}

/** Polls `cond` until true or `ms` elapse; the time it took. */
const within = (ms: number, cond: () => Promise<boolean> | boolean) => until(cond, ms);

describeEachDb("OpenID Connect JWKS from memory", (get) => {
  test("a strong ETag and Cache-Control; 304 on a matching If-None-Match (strong, weak, list, *); 200 otherwise", async () => {
    const t = get();
    const first = await t.request("GET", "/0.1/oidc/jwks");
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/); // strong: no W/ prefix
    expect(first.headers.get("cache-control")).toBe("public, max-age=300");
    expect(first.json.keys.length).toBeGreaterThanOrEqual(2);
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const r = await t.request("GET", "/0.1/oidc/jwks", { headers: { "If-None-Match": inm } });
      expect(r.status).toBe(304);
      expect(r.text).toBe("");
      expect(r.headers.get("etag")).toBe(etag);
      expect(r.headers.get("cache-control")).toBe("public, max-age=300");
    }
    const other = await t.request("GET", "/0.1/oidc/jwks", { headers: { "If-None-Match": '"other"' } });
    expect(other.status).toBe(200);
    expect(other.text).toBe(first.text);
  });

  test("the answer from memory is the route's answer; a rotation changes the set and its ETag at once", async () => {
    const t = get();
    const routed = await t.http.request("/0.1/oidc/jwks"); // the router alone
    expect(cachedJwks(t.app)).not.toBeNull();
    const fast = await t.request("GET", "/0.1/oidc/jwks"); // the handler: from memory
    expect(fast.text).toBe(await routed.text());
    for (const h of ["content-type", "etag", "cache-control"]) expect(fast.headers.get(h)).toBe(routed.headers.get(h));
    const kids = await rotateSigningKeys(t.app);
    const after = await t.request("GET", "/0.1/oidc/jwks", { headers: { "If-None-Match": fast.headers.get("etag")! } });
    expect(after.status).toBe(200);
    expect(after.headers.get("etag")).not.toBe(fast.headers.get("etag"));
    const published = (after.json.keys as Array<{ kid: string }>).map((k) => k.kid);
    for (const kid of kids) expect(published).toContain(kid);
    for (const k of fast.json.keys as Array<{ kid: string }>) expect(published).toContain(k.kid); // retired, still published
  });
});

describeEachDb("OpenID Connect client credentials grant", (get) => {
  test("one statement, no transaction: the session, token, record, event and audit entry are written; revocable", async () => {
    const t = get();
    const admin = await adminToken(t.app);
    const service = await registerService(t, admin);
    // Any transaction (BEGIN … COMMIT: two more round trips) would fail the grant.
    const transaction = t.app.db.transaction;
    t.app.db.transaction = (() => {
      throw new Error("the client credentials grant opened a transaction");
    }) as typeof transaction;
    let r: Awaited<ReturnType<typeof clientCredentials>>;
    try {
      r = await clientCredentials(t, service);
    } finally {
      t.app.db.transaction = transaction;
    }
    expect(r.status).toBe(200);
    const token = r.json.access_token as string;
    const [record] = await t.app.db.select().from(oidcAccessTokens).where(eq(oidcAccessTokens.tokenUuid, token));
    expect(record).toMatchObject({ clientId: service.client_id, userUuid: null, grantType: "client_credentials" });
    const [row] = await t.app.db.select().from(tokens).where(eq(tokens.uuid, token));
    expect(row!.sessionUuid).toBe(record!.sessionUuid);
    const audit = await t.app.db.select().from(auditEntries).where(eq(auditEntries.targetUuid, service.client_id));
    const login = audit.find((e) => e.action === "login.success");
    expect(login).toMatchObject({ actorSessionUuid: record!.sessionUuid, targetKind: "oidc_client" });
    const events = await t.app.db.select().from(eventOutbox).where(eq(eventOutbox.name, "auth_session_created"));
    expect(events.some((e) => JSON.stringify(e.payload).includes(record!.sessionUuid))).toBe(true);
    // Revocable: the client revokes it (RFC 7009), the token check no longer knows it.
    const revoke = await t.request("POST", "/0.1/oidc/revoke", {
      rawBody: `token=${token}`,
      headers: { Authorization: basic(service), "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(revoke.status).toBe(200);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
  });

  test("all or nothing: a grant for a client deleted meanwhile writes nothing at all", async () => {
    const t = get();
    const admin = await adminToken(t.app);
    const service = await registerService(t, admin);
    const stale = (await clientForAuthentication(t.app, service.client_id)) as ClientRow;
    await t.app.db.delete(oidcClients).where(eq(oidcClients.clientId, service.client_id));
    const count = async () => ({
      sessions: (await t.app.db.select().from(sessions)).length,
      tokens: (await t.app.db.select().from(tokens)).length,
      audit: (await t.app.db.select().from(auditEntries)).length,
      events: (await t.app.db.select().from(eventOutbox)).length,
    });
    const before = await count();
    let failed = false;
    await clientCredentialsToken(t.app, stale, { grant_type: "client_credentials" }, ORIGIN).catch(() => {
      failed = true;
    });
    expect(failed).toBe(true);
    expect(await count()).toEqual(before);
  });
});

const base = process.env.TEST_DATABASE_URL;

describe.skipIf(!base)("OpenID Connect caches across instances on one PostgreSQL", () => {
  async function pair() {
    const scratch = await scratchDatabase("tessera_oidc_caches", { migrated: true });
    const open = () => openDatabase({ url: scratch.url, poolSize: 3 });
    const a = await createTestApp("postgres", { database: open });
    const b = await createTestApp("postgres", { database: open });
    return {
      a,
      b,
      async close() {
        await a.close();
        await b.close();
        await scratch.drop();
      },
    };
  }

  test("a rotation on instance A is served by instance B's JWKS (and signs there) at once", async () => {
    const { a, b, close } = await pair();
    try {
      const before = await b.request("GET", "/0.1/oidc/jwks");
      expect(cachedJwks(b.app)).not.toBeNull(); // B answers from memory now
      const kids = await rotateSigningKeys(a.app);
      // Well within the signing keys' one-minute reload: only the notice can tell B this soon.
      const took = await within(2000, () => cachedJwks(b.app) === null);
      const after = await b.request("GET", "/0.1/oidc/jwks", {
        headers: { "If-None-Match": before.headers.get("etag")! },
      });
      expect(after.status).toBe(200);
      const published = (after.json.keys as Array<{ kid: string }>).map((k) => k.kid);
      for (const kid of kids) expect(published).toContain(kid);
      const { signingKey } = await import("../src/services/oidc/keys.ts");
      expect(kids).toContain((await signingKey(b.app, "ES256")).kid);
      console.log(`rotation seen by the other instance's JWKS after ${took.toFixed(1)} ms`);
    } finally {
      await close();
    }
  }, 60_000);

  test("a client deleted, or its secret replaced, on instance A stops authenticating on instance B at once", async () => {
    const { a, b, close } = await pair();
    try {
      const admin = await adminToken(a.app);
      const deleted = await registerService(a, admin);
      const rotated = await registerService(a, admin);
      // B authenticates both (client rows and verified secrets now in its memory) and issues tokens.
      for (const c of [deleted, rotated]) {
        expect((await authenticateClient(b.app, basic(c), {})).clientId).toBe(c.client_id);
        expect((await clientCredentials(b, c)).status).toBe(200);
      }
      // Deleted through A's API; B must refuse well before its five-second re-read.
      expect((await a.request("DELETE", `/0.1/oidc/clients/${deleted.client_id}`, { token: admin })).status).toBe(204);
      // A new secret written on A (directly: whatever writes the row, the database announces it).
      await a.app.db
        .update(oidcClients)
        .set({ secretHash: "0".repeat(64) })
        .where(eq(oidcClients.clientId, rotated.client_id));
      const refused = async (c: Registered) => (await clientCredentials(b, c)).status === 401;
      const tookDeleted = await within(1500, () => refused(deleted));
      const tookRotated = await within(1500, () => refused(rotated));
      expect((await clientCredentials(b, deleted)).json.error).toBe("invalid_client");
      console.log(
        `client change seen by the other instance after ${tookDeleted.toFixed(1)} ms (deleted), ${tookRotated.toFixed(1)} ms (secret)`,
      );
    } finally {
      await close();
    }
  }, 60_000);
});
