// A bounded, reproducible fuzzing run over every operation of the served OpenAPI document (see
// tests/helpers/fuzz.ts): no 5xx, the one JSON error body on every error, and the service still
// serves afterwards. `npm run fuzz` runs longer campaigns with other seeds.
import { afterAll, expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import { dateTimeRequests, generateRequests, operationsOf, runFuzz, seedResources } from "../helpers/fuzz.ts";
import { startSmtp } from "../helpers/smtp-server.ts";

const smtp = await startSmtp();
afterAll(() => smtp.close());

const SEED = 20261122;
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2500);

describeEachDb(
  "fuzzing every operation of the OpenAPI document",
  (get) => {
    test(`${REQUESTS} generated requests: no 5xx, one error body, still serving`, async () => {
      const t = get();
      const token = await adminToken(t.app);
      const ctx = await seedResources(t, token);
      const doc = parseYaml((await t.request("GET", "/0.1/api/api.yml")).text);
      const ops = operationsOf(doc);
      expect(ops.length).toBeGreaterThan(60);
      const requests = generateRequests(ops, ctx, REQUESTS, SEED);
      // every operation is tried
      expect(new Set(requests.map((r) => r.op)).size).toBe(ops.length);
      const { findings, statuses } = await runFuzz(t.app, requests, async (r) => {
        const res = await t.http.request(
          r.path,
          { method: r.method, headers: r.headers, body: r.body },
          { remoteAddr: "127.0.0.1" },
        );
        return { status: res.status, text: await res.text() };
      });
      for (const f of findings.slice(0, 10))
        console.error(
          `${f.problem}: ${f.request.method} ${f.request.path.slice(0, 200)} → ${f.status} ${f.body.slice(0, 200)}`,
        );
      expect(findings.map((f) => `${f.problem} ${f.request.op} ${f.status}`)).toEqual([]);
      // the run reached the handlers: successes and validation errors, not only refusals at the door
      const share = (pred: (s: number) => boolean) =>
        Object.entries(statuses)
          .filter(([s]) => pred(Number(s)))
          .reduce((a, [, n]) => a + n, 0) / REQUESTS;
      console.log(`fuzz [${t.kind}]: ${REQUESTS} requests, statuses ${JSON.stringify(statuses)}`);
      expect(share((s) => s < 300)).toBeGreaterThan(0.05);
      expect(share((s) => s === 400)).toBeGreaterThan(0.15);

      // the service still serves: the token check, a list, a new login
      expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
      const list = await t.request("GET", "/0.1/users", { token });
      expect([list.status, Array.isArray(list.json.items)]).toEqual([200, true]);
      const name = `after${crypto.randomUUID().slice(0, 6)}`;
      expect((await t.request("POST", "/0.1/users", { token, body: { username: name, password: "pw" } })).status).toBe(
        200,
      );
      expect(
        (
          await t.request("POST", "/0.1/token", {
            body: {},
            remoteAddr: "192.0.2.77",
            headers: { Authorization: `Basic ${btoa(`${name}:pw`)}` },
          })
        ).status,
      ).toBe(200);
    }, 240_000);

    test("every date-time parameter, every edge date and time: no 5xx, one error body", async () => {
      const t = get();
      const token = await adminToken(t.app);
      const ops = operationsOf(parseYaml((await t.request("GET", "/0.1/api/api.yml")).text));
      const requests = dateTimeRequests(ops, { token, ids: [], byName: {}, tenants: [] });
      // GET /audit's since and until at least
      expect(new Set(requests.map((r) => r.path.split("=")[0])).size).toBeGreaterThanOrEqual(2);
      const { findings, statuses } = await runFuzz(t.app, requests, async (r) => {
        const res = await t.http.request(r.path, { method: r.method, headers: r.headers }, { remoteAddr: "127.0.0.1" });
        return { status: res.status, text: await res.text() };
      });
      expect(findings.map((f) => `${f.problem} ${f.request.path} ${f.status}`)).toEqual([]);
      expect(statuses[400]).toBeGreaterThan(0);
    });
  },
  // An MFA key: without one, PostgreSQL answers the MFA routes 503 by design (docs/security.md "Multi-factor authentication").
  {
    config: {
      smtp: { hostname: "127.0.0.1", port: smtp.port },
      public_url: "https://auth.example.com",
      enabled_http_plugins: { user_registration: true },
      mfa: { encryption_keys: [{ id: "fuzz", key: Buffer.alloc(32, 3).toString("base64") }] },
    },
  },
);
