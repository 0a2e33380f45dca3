// Webhooks (/0.1/webhooks, docs/webhooks.md) against a real HTTP receiver started here that verifies every
// request as a Standard Webhooks receiver does: with the reference library, the `standardwebhooks` npm package
// (`new Webhook(secret).verify(payload, headers)`, which throws unless a `v1,` signature matches and the
// timestamp is within five minutes). A verifier written from the specification's text (standardwebhooks.com,
// "Verifying webhooks") backs it up: both must agree on every request checked.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { describeEachDb } from "../helpers/app.ts";
import { tenantFamily, tokenFor, createUserRow } from "../helpers/fixtures.ts";
import { until } from "../helpers/wait.ts";
import { startSmtp } from "../helpers/smtp-server.ts";
import { inTransaction } from "../../src/db/tx.ts";
import { execRows } from "../../src/db/index.ts";
import { emails, policies, userPolicies } from "../../src/db/schema.ts";
import { listRecordedEvents, publishEvent } from "../../src/services/events.ts";

/** Standard Webhooks verification, from the specification's text (independent of the signing code). */
function verifyBySpec(secrets: string[], headers: Headers, body: string): boolean {
  const id = headers.get("webhook-id");
  const timestamp = headers.get("webhook-timestamp");
  const signatures = headers.get("webhook-signature");
  if (!id || !timestamp || !signatures) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  for (const secret of secrets) {
    const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
    const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
    for (const versioned of signatures.split(" ")) {
      const [version, signature] = versioned.split(",");
      if (version !== "v1" || !signature) continue;
      const given = Buffer.from(signature, "base64");
      if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
    }
  }
  return false;
}

/** Verification by the reference library: a receiver holding any one of `secrets` accepts the request. */
function verifyByLibrary(secrets: string[], headers: Headers, body: string): boolean {
  const given = Object.fromEntries(headers.entries());
  return secrets.some((secret) => {
    try {
      new Webhook(secret).verify(body, given);
      return true;
    } catch {
      return false;
    }
  });
}

/** The library's verdict, which the specification's verifier must share. */
function verify(secrets: string[], headers: Headers, body: string): boolean {
  const verdict = verifyByLibrary(secrets, headers, body);
  expect(verifyBySpec(secrets, headers, body)).toBe(verdict);
  return verdict;
}

interface Hit {
  path: string;
  id: string;
  status: number;
  // biome-ignore lint: the receiver's JSON
  body: any;
  headers: Headers;
  raw: string;
}

/** The answer of a path that never answers (its request stays open until the sender gives up). */
const HANG = 0;

/** A receiver per test suite: paths answer 200 unless told a status (or HANG); every request is kept. */
function receiver() {
  const hits: Hit[] = [];
  const answer = new Map<string, number>();
  // Requests held open per hanging path: now, and at most at once.
  const open = new Map<string, { now: number; max: number }>();
  const server: Bun.Server<undefined> = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req): Promise<Response> {
      const path = new URL(req.url).pathname;
      const raw = await req.text();
      const status = answer.get(path) ?? 200;
      hits.push({
        path,
        id: req.headers.get("webhook-id") ?? "",
        status,
        body: JSON.parse(raw),
        headers: req.headers,
        raw,
      });
      if (status === HANG) {
        const o = open.get(path) ?? { now: 0, max: 0 };
        open.set(path, o);
        o.now++;
        o.max = Math.max(o.max, o.now);
        req.signal.addEventListener("abort", () => o.now--);
        return new Promise<Response>(() => {});
      }
      return status === 302
        ? new Response(null, { status, headers: { location: `http://127.0.0.1:${server.port}/redirected` } })
        : new Response("", { status });
    },
  });
  return {
    server,
    hits,
    answer,
    open,
    url: (path: string) => `http://127.0.0.1:${server.port}${path}`,
    delivered: (path: string) => hits.filter((h) => h.path === path && h.status >= 200 && h.status < 300),
  };
}

const rx = receiver();
const smtp = await startSmtp();
afterAll(async () => {
  rx.server.stop(true);
  await smtp.close();
});

const uniq = () => crypto.randomUUID().slice(0, 8);

const config = {
  outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true, timeout_ms: 2000 },
  outbound_delivery: { retry_initial_seconds: 0.05, retry_max_interval_seconds: 0.3, poll_seconds: 0.2 },
};

describeEachDb(
  "webhooks",
  (get) => {
    let family: Awaited<ReturnType<typeof tenantFamily>>;
    beforeAll(async () => {
      family = await tenantFamily(get().app);
    });

    const create = async (token: string, path: string, events: string[], extra: Record<string, unknown> = {}) => {
      const r = await get().request("POST", "/0.1/webhooks", {
        token,
        body: { url: rx.url(path), events, description: path, ...extra },
      });
      expect(r.status).toBe(201);
      return r.json as { uuid: string; secret: string; tenant_uuid: string };
    };

    const newUser = async (tenant: string, username = `u${uniq()}`) => {
      const r = await get().request("POST", "/0.1/users", {
        token: tenant === family.sibling ? family.siblingAdmin : family.admin,
        tenant,
        body: { username, password: "pw" },
      });
      expect(r.status).toBe(200);
      return r.json.uuid as string;
    };

    test("creation: 201, the secret shown once, an event and an audit entry without it", async () => {
      const t = get();
      const path = `/created-${t.kind}`;
      const w = await create(family.admin, path, ["auth_user_*", "auth_group_created"]);
      expect(w).toMatchObject({
        tenant_uuid: family.tenant,
        events: ["auth_user_*", "auth_group_created"],
        enabled: true,
      });
      expect(w.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const read = await t.request("GET", `/0.1/webhooks/${w.uuid}`, { token: family.admin });
      expect(read.status).toBe(200);
      expect(read.json).toMatchObject({ uuid: w.uuid, url: rx.url(path), description: path, disabled_reason: null });
      expect(read.text).not.toContain(w.secret.slice(6, 20));
      const list = await t.request("GET", "/0.1/webhooks", { token: family.admin });
      expect(list.json.items.map((i: { uuid: string }) => i.uuid)).toContain(w.uuid);
      expect(list.text).not.toContain(w.secret.slice(6, 20));
      const events = (await listRecordedEvents(t.app.db)).filter((e) => e.name === "auth_webhook_created");
      expect(events.at(-1)?.payload.data).toMatchObject({ uuid: w.uuid, tenant_uuid: family.tenant });
      expect(JSON.stringify(events)).not.toContain(w.secret.slice(6, 20));
      const audit = await execRows<{ action: string; changes: unknown }>(
        t.app.db,
        sql`select action, changes from tessera.audit where target_uuid = ${w.uuid}`,
      );
      expect(audit.map((a) => a.action)).toEqual(["webhook.create"]);
      expect(JSON.stringify(audit)).not.toContain(w.secret.slice(6, 20));
    });

    test("bad input: 400 with the field named; private, metadata and plain addresses refused", async () => {
      const t = get();
      const post = (body: unknown) => t.request("POST", "/0.1/webhooks", { token: family.admin, body });
      for (const url of [
        "http://10.0.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:8080/",
        "ftp://example.com/x",
        "not a url",
        "https://user:pw@example.com/",
      ]) {
        const r = await post({ url, events: ["*"] });
        expect([r.status, r.json.error_id, Object.keys(r.json.details)]).toEqual([400, "invalid-data", ["url"]]);
      }
      for (const events of [[], ["AUTH_USER"], ["auth_*_created"], ["a b"]]) {
        const r = await post({ url: "https://example.com/hook", events });
        expect([r.status, Object.keys(r.json.details)]).toEqual([400, ["events"]]);
      }
      const noBody = await t.request("POST", "/0.1/webhooks", {
        token: family.admin,
        rawBody: "{",
        headers: { "content-type": "application/json" },
      });
      expect(noBody.status).toBe(400);
      const [{ n }] = (await execRows<{ n: number }>(
        t.app.db,
        sql`select count(*)::int as n from tessera_webhook where url like '%10.0.0.1%' or url like '%169.254%'`,
      )) as [{ n: number }];
      expect(n).toBe(0);
    });

    test("every event of the tenant's subtree is delivered, signed; another tenant's never", async () => {
      const t = get();
      const mine = `/subtree-${t.kind}`;
      const theirs = `/sibling-${t.kind}`;
      const w = await create(family.admin, mine, ["auth_user_created"]);
      const s = await create(family.siblingAdmin, theirs, ["*"]);
      const inChild = await newUser(family.child);
      const inTenant = await newUser(family.tenant);
      const inSibling = await newUser(family.sibling);
      await until(() => rx.delivered(mine).length >= 2);
      await until(() => rx.delivered(theirs).some((h) => h.body.data.uuid === inSibling));
      const got = rx.delivered(mine).map((h) => h.body.data.uuid);
      expect(got).toContain(inChild);
      expect(got).toContain(inTenant);
      expect(got).not.toContain(inSibling);
      expect(rx.delivered(theirs).some((h) => [inChild, inTenant].includes(h.body.data?.uuid))).toBe(false);
      for (const h of rx.delivered(mine)) {
        expect(verify([w.secret], h.headers, h.raw)).toBe(true);
        expect(verify([s.secret], h.headers, h.raw)).toBe(false);
        expect(h.id).toMatch(/^msg_[0-9a-f]{32}$/);
        expect(h.body.type).toBe("auth_user_created");
        expect(typeof h.body.data.uuid).toBe("string");
        expect(h.headers.get("content-type")).toBe("application/json");
      }
      const child = rx.delivered(mine).find((h) => h.body.data.uuid === inChild)!;
      expect(child.body.tenant_uuid).toBe(family.child);
      expect(Date.parse(child.body.timestamp)).toBeGreaterThan(Date.now() - 60_000);
      // The sibling's webhook got its own tenant's events, verified with its own secret.
      for (const h of rx.delivered(theirs)) expect(verify([s.secret], h.headers, h.raw)).toBe(true);
    });

    test("a rolled-back change delivers nothing; a committed one is delivered", async () => {
      const t = get();
      const path = `/rollback-${t.kind}`;
      await create(family.admin, path, ["test_rollback_*"]);
      const event = (n: number) => ({
        name: `test_rollback_${n}`,
        routingKey: "test.rollback",
        data: { n },
        tenantUuid: family.tenant,
        aggregate: `test:${path}`,
      });
      // (try/catch: under `expect(...).rejects` the transaction of the embedded database never started.)
      let failure: unknown = null;
      try {
        await inTransaction(t.app, async (tx) => {
          await publishEvent(t.app, tx, event(1));
          throw new Error("rolled back");
        });
      } catch (e) {
        failure = e;
      }
      expect((failure as Error).message).toBe("rolled back");
      await inTransaction(t.app, (tx) => publishEvent(t.app, tx, event(2)));
      await until(() => rx.delivered(path).length === 1);
      expect(rx.hits.filter((h) => h.path === path).map((h) => h.body.data.n)).toEqual([2]);
      const rows = await execRows<{ n: number }>(
        t.app.db,
        sql`select count(*)::int as n from tessera_outbound_delivery where payload->'event'->>'type' = 'test_rollback_1'`,
      );
      expect(rows[0]?.n).toBe(0);
    });

    test("a receiver down then back: every event delivered, in order per resource, the same webhook-id on retries", async () => {
      const t = get();
      const path = `/down-${t.kind}`;
      const w = await create(family.admin, path, ["auth_user_*"]);
      rx.answer.set(path, 503);
      const user = await newUser(family.tenant);
      for (let i = 1; i <= 3; i++) {
        const r = await t.request("PUT", `/0.1/users/${user}`, {
          token: family.admin,
          body: { username: `renamed-${i}-${uniq()}`, firstname: `v${i}` },
        });
        expect(r.status).toBeLessThan(300);
      }
      await until(() => rx.hits.filter((h) => h.path === path).length >= 4);
      rx.answer.delete(path);
      await until(() => rx.delivered(path).length >= 4, 15_000);
      const delivered = rx.delivered(path);
      expect(delivered.map((h) => h.body.type)).toEqual([
        "auth_user_created",
        "auth_user_updated",
        "auth_user_updated",
        "auth_user_updated",
      ]);
      expect(delivered.slice(1).map((h) => h.body.data.username.split("-")[1])).toEqual(["1", "2", "3"]);
      expect(new Set(delivered.map((h) => h.id)).size).toBe(4);
      // The first event was tried several times with one id; each attempt freshly signed.
      const first = rx.hits.filter((h) => h.path === path && h.id === delivered[0]!.id);
      expect(first.length).toBeGreaterThan(1);
      for (const h of first) expect(verify([w.secret], h.headers, h.raw)).toBe(true);
      const log = await t.request("GET", `/0.1/webhooks/${w.uuid}/deliveries`, { token: family.admin });
      expect(log.status).toBe(200);
      await until(async () =>
        (await t.request("GET", `/0.1/webhooks/${w.uuid}/deliveries`, { token: family.admin })).json.items.every(
          (d: { status: string }) => d.status === "delivered",
        ),
      );
      const items = (
        await t.request("GET", `/0.1/webhooks/${w.uuid}/deliveries?direction=desc`, { token: family.admin })
      ).json.items;
      expect(items).toHaveLength(4);
      expect(items.at(-1)).toMatchObject({
        event_type: "auth_user_created",
        message_id: delivered[0]!.id,
        status: "delivered",
        response_status_code: 200,
        error: null,
      });
      expect(items.at(-1).attempts).toBeGreaterThan(1);
      expect(typeof items.at(-1).latency_ms).toBe("number");
    }, 30_000);

    test("a receiver that hangs holds back no other webhook: bounded in flight, the other served promptly", async () => {
      const t = get();
      const hung = `/hung-${t.kind}`;
      const prompt = `/prompt-${t.kind}`;
      rx.answer.set(hung, HANG);
      const h = await create(family.admin, hung, ["auth_user_created"]);
      const p = await create(family.admin, prompt, ["auth_user_created"]);
      const names: string[] = [];
      for (let i = 0; i < 8; i++) {
        names.push(`hang${i}-${uniq()}`);
        await newUser(family.tenant, names.at(-1));
      }
      const hitsAt = (path: string) => rx.hits.filter((x) => x.path === path);
      await until(() => rx.delivered(prompt).length === 8, 10_000);
      // Promptly: every event reached the other endpoint before the hanging one's first attempts timed out
      // (no event of it sent twice yet), while it held at most `per_owner_concurrency` requests open.
      const perOwner = t.app.config.outbound_delivery.per_owner_concurrency;
      const tried = hitsAt(hung).map((x) => x.id);
      expect(tried.length).toBeGreaterThan(0);
      expect(new Set(tried).size).toBe(tried.length);
      expect(rx.open.get(hung)!.now).toBeGreaterThan(0);
      expect(rx.open.get(hung)!.max).toBeLessThanOrEqual(perOwner);
      expect(new Set(rx.delivered(prompt).map((x) => x.body.data.username))).toEqual(new Set(names));
      for (const x of rx.delivered(prompt)) expect(verify([p.secret], x.headers, x.raw)).toBe(true);
      // The hanging endpoint's attempts time out and are retried, never more than `per_owner_concurrency`
      // at once; once it answers, it receives every event too, each under one webhook-id throughout.
      await until(() => hitsAt(hung).length > tried.length, 15_000);
      expect(rx.open.get(hung)!.max).toBeLessThanOrEqual(perOwner);
      rx.answer.delete(hung);
      await until(() => new Set(rx.delivered(hung).map((x) => x.body.data.username)).size === 8, 25_000);
      expect(new Set(rx.delivered(hung).map((x) => x.body.data.username))).toEqual(new Set(names));
      const idOf = new Map<string, Set<string>>();
      for (const x of hitsAt(hung))
        idOf.set(x.body.data.username, (idOf.get(x.body.data.username) ?? new Set()).add(x.id));
      for (const ids of idOf.values()) expect(ids.size).toBe(1);
      const del = await t.request("DELETE", `/0.1/webhooks/${h.uuid}`, { token: family.admin });
      expect(del.status).toBeLessThan(300);
    }, 40_000);

    test("rotation: both secrets sign during the grace; the new one is shown once", async () => {
      const t = get();
      const path = `/rotate-${t.kind}`;
      const w = await create(family.admin, path, ["auth_user_created"]);
      const r = await t.request("POST", `/0.1/webhooks/${w.uuid}/secret`, { token: family.admin });
      expect(r.status).toBe(200);
      expect(r.json.secret).not.toBe(w.secret);
      expect(Date.parse(r.json.previous_secret_expires_at)).toBeGreaterThan(Date.now());
      await newUser(family.tenant);
      await until(() => rx.delivered(path).length === 1);
      const [h] = rx.delivered(path);
      expect(h!.headers.get("webhook-signature")!.split(" ")).toHaveLength(2);
      expect(verify([r.json.secret], h!.headers, h!.raw)).toBe(true);
      expect(verify([w.secret], h!.headers, h!.raw)).toBe(true);
      expect(verify([r.json.secret, w.secret], h!.headers, `${h!.raw} `)).toBe(false);
      const read = await t.request("GET", `/0.1/webhooks/${w.uuid}`, { token: family.admin });
      expect(read.text).not.toContain(r.json.secret.slice(6, 20));
    });

    test("ping, redelivery with the same webhook-id, and a redirect never followed", async () => {
      const t = get();
      const path = `/ping-${t.kind}`;
      const w = await create(family.admin, path, ["nothing_matches"]);
      const ping = await t.request("POST", `/0.1/webhooks/${w.uuid}/ping`, { token: family.admin });
      expect(ping.status).toBe(202);
      await until(() => rx.delivered(path).length === 1);
      expect(rx.delivered(path)[0]!.body).toMatchObject({ type: "webhook_ping", data: { webhook_uuid: w.uuid } });
      const again = await t.request("POST", `/0.1/webhooks/${w.uuid}/deliveries/${ping.json.uuid}/redeliver`, {
        token: family.admin,
      });
      expect(again.status).toBe(202);
      await until(() => rx.delivered(path).length === 2);
      const [a, b] = rx.delivered(path);
      expect(b!.id).toBe(a!.id);
      expect(verify([w.secret], b!.headers, b!.raw)).toBe(true);
      const missing = await t.request("POST", `/0.1/webhooks/${w.uuid}/deliveries/${crypto.randomUUID()}/redeliver`, {
        token: family.admin,
      });
      expect(missing.status).toBe(404);
      // A 302 to loopback is a failed attempt, not followed.
      const redirecting = `/redirect-${t.kind}`;
      rx.answer.set(redirecting, 302);
      const r = await create(family.admin, redirecting, ["nothing_matches"]);
      await t.request("POST", `/0.1/webhooks/${r.uuid}/ping`, { token: family.admin });
      await until(async () =>
        (await t.request("GET", `/0.1/webhooks/${r.uuid}/deliveries`, { token: family.admin })).json.items.some(
          (d: { response_status_code: number | null }) => d.response_status_code === 302,
        ),
      );
      expect(rx.hits.some((h) => h.path === "/redirected")).toBe(false);
      await t.request("DELETE", `/0.1/webhooks/${r.uuid}`, { token: family.admin });
    });

    test("tenant isolation: other tenants see, change and delete nothing; recurse shows the children's", async () => {
      const t = get();
      const w = await create(family.admin, `/iso-${t.kind}`, ["auth_user_created"]);
      const c = await create(family.childAdmin, `/iso-child-${t.kind}`, ["auth_user_created"]);
      for (const token of [family.siblingAdmin, family.childAdmin]) {
        expect((await t.request("GET", `/0.1/webhooks/${w.uuid}`, { token })).status).toBe(404);
        expect((await t.request("GET", `/0.1/webhooks/${w.uuid}/deliveries`, { token })).status).toBe(404);
        expect((await t.request("POST", `/0.1/webhooks/${w.uuid}/secret`, { token })).status).toBe(404);
        expect((await t.request("POST", `/0.1/webhooks/${w.uuid}/ping`, { token })).status).toBe(404);
        const put = await t.request("PUT", `/0.1/webhooks/${w.uuid}`, {
          token,
          body: { url: "https://evil.example.com/", events: ["*"] },
        });
        expect(put.status).toBe(404);
        expect((await t.request("DELETE", `/0.1/webhooks/${w.uuid}`, { token })).status).toBe(204);
        const list = await t.request("GET", "/0.1/webhooks?recurse=true", { token });
        expect(list.json.items.map((i: { uuid: string }) => i.uuid)).not.toContain(w.uuid);
      }
      expect((await t.request("GET", `/0.1/webhooks/${w.uuid}`, { token: family.admin })).json.url).toBe(
        rx.url(`/iso-${t.kind}`),
      );
      const flat = await t.request("GET", "/0.1/webhooks", { token: family.admin });
      expect(flat.json.items.map((i: { uuid: string }) => i.uuid)).not.toContain(c.uuid);
      const deep = await t.request("GET", "/0.1/webhooks?recurse=true", { token: family.admin });
      expect(deep.json.items.map((i: { uuid: string }) => i.uuid)).toContain(c.uuid);
      const reader = (await tokenFor(t.app, { acl: ["auth.users.read"], tenantUuid: family.tenant })).token;
      expect((await t.request("GET", "/0.1/webhooks", { token: reader })).status).toBe(403);
    });

    test("update and delete: audited and evented; a deleted webhook's pending deliveries go", async () => {
      const t = get();
      const path = `/upd-${t.kind}`;
      const w = await create(family.admin, path, ["auth_user_created"]);
      const put = await t.request("PUT", `/0.1/webhooks/${w.uuid}`, {
        token: family.admin,
        body: { url: rx.url(`${path}-2`), events: ["auth_group_*"], enabled: false },
      });
      expect([put.status, put.text]).toEqual([204, ""]);
      const updated = await t.request("GET", `/0.1/webhooks/${w.uuid}`, { token: family.admin });
      expect(updated.json).toMatchObject({ url: rx.url(`${path}-2`), events: ["auth_group_*"], enabled: false });
      const bad = await t.request("PUT", `/0.1/webhooks/${w.uuid}`, {
        token: family.admin,
        body: { url: "http://169.254.169.254/", events: ["*"] },
      });
      expect([bad.status, Object.keys(bad.json.details)]).toEqual([400, ["url"]]);
      expect((await t.request("DELETE", `/0.1/webhooks/${w.uuid}`, { token: family.admin })).status).toBe(204);
      expect((await t.request("GET", `/0.1/webhooks/${w.uuid}`, { token: family.admin })).status).toBe(404);
      const names = (await listRecordedEvents(t.app.db))
        .filter((e) => (e.payload.data as { uuid?: string }).uuid === w.uuid)
        .map((e) => e.name);
      expect(names).toEqual(["auth_webhook_created", "auth_webhook_updated", "auth_webhook_deleted"]);
      const audit = await execRows<{ action: string }>(
        t.app.db,
        sql`select action from tessera.audit where target_uuid = ${w.uuid} order by id`,
      );
      expect(audit.map((a) => a.action)).toEqual(["webhook.create", "webhook.update", "webhook.delete"]);
    });
  },
  { config },
);

describeEachDb(
  "webhooks: a failure streak disables",
  (get) => {
    test("disabled after the streak, with an event, an audit entry and a mail to the tenant's administrators", async () => {
      const t = get();
      const family = await tenantFamily(t.app);
      const adminUser = await createUserRow(t.app, { tenantUuid: family.tenant });
      const address = `admin-${uniq()}@example.com`;
      await t.app.db.insert(emails).values({ address, userUuid: adminUser, main: true, confirmed: true });
      const [policy] = await t.app.db.select().from(policies).where(eq(policies.slug, "tessera_tenant_admin"));
      await t.app.db.insert(userPolicies).values({ userUuid: adminUser, policyUuid: policy!.uuid });
      const path = `/dead-${t.kind}`;
      rx.answer.set(path, 500);
      const r = await t.request("POST", "/0.1/webhooks", {
        token: family.admin,
        body: { url: rx.url(path), events: ["auth_user_created"] },
      });
      expect(r.status).toBe(201);
      await t.request("POST", `/0.1/webhooks/${r.json.uuid}/ping`, { token: family.admin });
      await until(
        async () => !(await t.request("GET", `/0.1/webhooks/${r.json.uuid}`, { token: family.admin })).json.enabled,
        10_000,
      );
      const read = await t.request("GET", `/0.1/webhooks/${r.json.uuid}`, { token: family.admin });
      expect(read.json.disabled_reason).toContain("failed attempts in a row");
      const mail = await smtp.waitForMail((m) => m.to.includes(address), 10_000);
      expect(mail.text).toContain(r.json.uuid);
      expect(mail.text).not.toContain(r.json.secret.slice(6, 20));
      const events = (await listRecordedEvents(t.app.db)).filter((e) => e.name === "auth_webhook_disabled");
      expect(events.map((e) => (e.payload.data as { uuid: string }).uuid)).toContain(r.json.uuid);
      const audit = await execRows<{ action: string; outcome: string }>(
        t.app.db,
        sql`select action, outcome from tessera.audit where target_uuid = ${r.json.uuid} and action = 'webhook.disable'`,
      );
      expect(audit).toEqual([{ action: "webhook.disable", outcome: "failure_streak" }]);
      // Enabled again: the streak starts over.
      const put = await t.request("PUT", `/0.1/webhooks/${r.json.uuid}`, {
        token: family.admin,
        body: { url: rx.url(`${path}-fixed`), events: ["auth_user_created"], enabled: true },
      });
      expect(put.status).toBe(204);
      const again = await t.request("GET", `/0.1/webhooks/${r.json.uuid}`, { token: family.admin });
      expect(again.json).toMatchObject({ enabled: true, disabled_reason: null });
      // An attempt already under way when it was disabled may still fail and count once; the next
      // delivery to the fixed URL succeeds and the streak is back to nothing.
      const streak = async () =>
        (
          await execRows<{ n: number }>(
            t.app.db,
            sql`select coalesce(max(failures), 0)::int as n from tessera_outbound_owner where owner_key = ${r.json.uuid}`,
          )
        )[0]?.n;
      await t.request("POST", `/0.1/webhooks/${r.json.uuid}/ping`, { token: family.admin });
      await until(async () => (await streak()) === 0, 10_000);
    }, 30_000);
  },
  {
    config: {
      ...config,
      webhooks: { disable_after_failures: 3, disable_after_seconds: 0 },
      smtp: { hostname: "127.0.0.1", port: smtp.port },
    },
  },
);
