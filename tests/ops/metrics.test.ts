// Prometheus metrics on their own listener: request histogram by route template, token checks by
// result, cache lookups, logins by result and backend, password-hash time, outbox and database.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { describeEachDb, createTestApp, peerAt } from "../helpers/app.ts";
import { adminToken, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { renderMetrics, startMetricsServer } from "../../src/observe/metrics.ts";
import { outboxBacklog } from "../../src/bus/outbox.ts";
import { createHandler } from "../../src/app.ts";

/** Sum of the samples `name{labels…}` in an exposition text (other labels free); 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const ok = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (ok) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

describeEachDb(
  "metrics",
  (get) => {
    let server: Awaited<ReturnType<typeof startMetricsServer>>;
    const scrape = async () => {
      const r = await fetch(`http://127.0.0.1:${server!.port}/metrics`);
      expect(r.status).toBe(200);
      expect(r.headers.get("Content-Type")).toContain("text/plain");
      return r.text();
    };
    beforeAll(async () => {
      server = await startMetricsServer(get().app, { outboxBacklog: () => outboxBacklog(get().app) });
    });
    afterAll(() => server?.stop(true));

    test("the listener serves /metrics without authentication, and nothing else", async () => {
      expect(server).not.toBeNull();
      const text = await scrape();
      expect(text).toContain("# TYPE tessera_http_request_duration_seconds histogram");
      expect(text).toContain("tessera_database_up 1");
      expect(text).toMatch(/tessera_outbox_backlog \d+/);
      expect((await fetch(`http://127.0.0.1:${server!.port}/other`)).status).toBe(404);
      expect((await get().request("GET", "/metrics")).status).toBe(404); // not on the API listener
    });

    test("token checks by result, cache lookups, and requests by route template", async () => {
      const t = get();
      const { token } = await tokenFor(t.app, { acl: ["confd.users.read"] });
      const before = await scrape();
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=confd.users.read`)).status).toBe(204);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=confd.users.read`)).status).toBe(204);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=auth.users.read`)).status).toBe(403);
      expect((await t.request("HEAD", `/0.1/token/${crypto.randomUUID()}`)).status).toBe(404);
      expect((await t.request("GET", `/0.1/no/such/${crypto.randomUUID()}`)).status).toBe(404);
      const after = await scrape();
      const delta = (name: string, labels: Record<string, string> = {}) =>
        sample(after, name, labels) - sample(before, name, labels);
      expect(delta("tessera_token_checks_total", { result: "valid" })).toBe(2);
      expect(delta("tessera_token_checks_total", { result: "forbidden" })).toBe(1);
      expect(delta("tessera_token_checks_total", { result: "invalid" })).toBe(1);
      expect(delta("tessera_token_cache_lookups_total", { result: "hit" })).toBeGreaterThanOrEqual(2);
      expect(
        delta("tessera_http_request_duration_seconds_count", {
          method: "HEAD",
          route: "/0.1/token/:token",
          status_code: "204",
        }),
      ).toBe(2);
      expect(
        delta("tessera_http_request_duration_seconds_count", {
          method: "HEAD",
          route: "/0.1/token/:token",
          status_code: "404",
        }),
      ).toBe(1);
      expect(
        delta("tessera_http_request_duration_seconds_count", { method: "GET", route: "unmatched", status_code: "404" }),
      ).toBe(1);
      // buckets are cumulative and end with +Inf = _count
      const series = { method: "HEAD", route: "/0.1/token/:token", status_code: "204" };
      const buckets = after
        .split("\n")
        .filter(
          (l) =>
            l.startsWith("tessera_http_request_duration_seconds_bucket{") &&
            Object.entries(series).every(([k, v]) => l.includes(`${k}="${v}"`)),
        );
      const counts = buckets.map((l) => Number(l.slice(l.lastIndexOf(" ") + 1)));
      expect(buckets.at(-1)).toContain('le="+Inf"');
      expect(counts.every((c, i) => i === 0 || c >= counts[i - 1]!)).toBe(true);
      expect(counts.at(-1)).toBe(sample(after, "tessera_http_request_duration_seconds_count", series));
      expect(sample(after, "tessera_http_request_duration_seconds_sum", series)).toBeGreaterThan(0);
      expect(after).not.toContain(token); // never a token, a uuid or a raw path in a label
      expect(after).not.toContain("/no/such/");
    });

    test("the token check answered before the router counts the same", async () => {
      const t = get();
      const { token } = await tokenFor(t.app, { acl: ["confd.users.read"] });
      const handle = createHandler(t.app, t.http);
      const check = () =>
        handle(
          new Request(`http://localhost/0.1/token/${token}?scope=confd.users.read`, { method: "HEAD" }),
          peerAt("127.0.0.1"),
        );
      expect((await check()).status).toBe(204); // the first one reads the database and fills the cache
      const before = await scrape();
      for (let i = 0; i < 3; i++) expect((await check()).status).toBe(204);
      const after = await scrape();
      const delta = (name: string, labels: Record<string, string> = {}) =>
        sample(after, name, labels) - sample(before, name, labels);
      expect(delta("tessera_token_checks_total", { result: "valid" })).toBe(3);
      expect(delta("tessera_token_cache_lookups_total", { result: "hit" })).toBe(3);
      expect(
        delta("tessera_http_request_duration_seconds_count", {
          method: "HEAD",
          route: "/0.1/token/:token",
          status_code: "204",
        }),
      ).toBe(3);
    });

    test("logins by result and backend, and the password-hash time", async () => {
      const t = get();
      await createUserRow(t.app, { username: "metered", password: "s3cret" });
      const before = await scrape();
      const login = (password: string) =>
        t.request("POST", "/0.1/token", {
          headers: { Authorization: `Basic ${btoa(`metered:${password}`)}` },
          body: {},
        });
      expect((await login("s3cret")).status).toBe(200);
      expect((await login("wrong")).status).toBe(401);
      const after = await scrape();
      const delta = (name: string, labels: Record<string, string> = {}) =>
        sample(after, name, labels) - sample(before, name, labels);
      expect(delta("tessera_logins_total", { result: "success", backend: "native" })).toBe(1);
      expect(delta("tessera_logins_total", { result: "failure" })).toBe(1);
      expect(delta("tessera_password_hash_duration_seconds_count")).toBeGreaterThanOrEqual(2);
      expect(after).not.toContain("s3cret");
    });
  },
  { config: { metrics: { listen: "127.0.0.1", port: 0 } } },
);

test("metrics are off unless metrics.port is configured: no listener, no request histogram", async () => {
  const t = await createTestApp("pglite");
  try {
    expect(await startMetricsServer(t.app, { outboxBacklog: () => outboxBacklog(t.app) })).toBeNull();
    const admin = await adminToken(t.app);
    expect((await t.request("GET", "/0.1/users", { token: admin })).status).toBe(200);
    const text = (await renderMetrics()).body;
    expect(sample(text, "tessera_http_request_duration_seconds_count", { route: "/0.1/users", method: "GET" })).toBe(0);
  } finally {
    await t.close();
  }
}, 60_000);
