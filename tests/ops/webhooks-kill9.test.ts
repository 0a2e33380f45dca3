// Webhooks survive kill -9 (docs/webhooks.md, "Delivery"): a real Tessera process on PostgreSQL delivers to a
// receiver that holds its first requests open; the process is killed with SIGKILL while those deliveries are
// in flight; another instance started on the same database delivers every event once the dead one's lease ends:
// at least once, each under the `webhook-id` of its first attempt, verified with the `standardwebhooks` library.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { adminLogin, InstanceFleet } from "../helpers/tessera-instances.ts";
import { until } from "../helpers/wait.ts";

const base = process.env.TEST_DATABASE_URL;

interface Hit {
  id: string;
  username: string;
  answered: boolean;
  headers: Record<string, string>;
  raw: string;
}

describe.skipIf(!base)("webhooks: kill -9 during delivery (real processes, PostgreSQL)", () => {
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  const fleet = new InstanceFleet();
  const hits: Hit[] = [];
  let holding = true; // the receiver holds requests open (never answers) until the instance dies
  const receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const raw = await req.text();
      const hit: Hit = {
        id: req.headers.get("webhook-id") ?? "",
        username: JSON.parse(raw).data?.username ?? "",
        answered: !holding,
        headers: Object.fromEntries(req.headers.entries()),
        raw,
      };
      hits.push(hit);
      if (!hit.answered) return new Promise<Response>(() => {});
      return new Response("", { status: 204 });
    },
  });
  const extra = {
    outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true, timeout_ms: 2000 },
    outbound_delivery: { retry_initial_seconds: 0.05, retry_max_interval_seconds: 0.5, poll_seconds: 0.2 },
  };

  beforeAll(async () => {
    scratch = await scratchDatabase("tessera_whkill");
    fleet.bootstrap({ dbUri: scratch.url, extra });
  }, 60_000);

  afterAll(async () => {
    receiver.stop(true);
    await fleet.stopAll();
    await scratch?.drop();
  }, 60_000);

  test("SIGKILL with deliveries in flight: another instance on the database delivers every event, same ids", async () => {
    const a = await fleet.start("a", { dbUri: scratch.url, extra });
    const token = await adminLogin(a.url);
    const call = (url: string, method: string, path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method,
        headers: { "X-Auth-Token": token, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    const created = await call(a.url, "POST", "/webhooks", {
      url: `http://127.0.0.1:${receiver.port}/hook`,
      events: ["auth_user_created"],
      description: "kill -9",
    });
    expect(created.status).toBe(201);
    const { secret } = (await created.json()) as { secret: string };
    const names = Array.from({ length: 6 }, (_, i) => `kill9-${i}-${crypto.randomUUID().slice(0, 6)}`);
    for (const username of names) {
      const r = await call(a.url, "POST", "/users", { username, password: "Kill9-long-password!" });
      expect(r.status).toBe(200);
    }
    // Deliveries in flight on `a`: held open by the receiver, no answer given yet.
    await until(() => hits.length >= 1, 15_000);
    const inFlight = hits.map((h) => ({ id: h.id, username: h.username }));
    a.kill("SIGKILL");
    expect(await a.proc.exited).not.toBe(0);
    expect(a.proc.signalCode).toBe("SIGKILL");
    expect(hits.some((h) => h.answered)).toBe(false);
    holding = false;

    // Another instance on the same database: once the dead instance's lease ends, it sends everything.
    await fleet.start("b", { dbUri: scratch.url, extra });
    const deliveredNames = () => new Set(hits.filter((h) => h.answered).map((h) => h.username));
    await until(() => names.every((n) => deliveredNames().has(n)), 90_000);

    // Every event delivered (at least once), each under one webhook-id; those in flight at the kill under
    // the id of their first attempt; every request signed as Standard Webhooks says.
    expect(deliveredNames()).toEqual(new Set(names));
    const idsOf = new Map<string, Set<string>>();
    for (const h of hits) idsOf.set(h.username, (idsOf.get(h.username) ?? new Set()).add(h.id));
    for (const n of names) expect(idsOf.get(n)?.size).toBe(1);
    for (const f of inFlight) expect(idsOf.get(f.username)).toEqual(new Set([f.id]));
    expect(new Set(names.map((n) => [...idsOf.get(n)!][0])).size).toBe(names.length);
    const wh = new Webhook(secret);
    for (const h of hits.filter((x) => x.answered)) expect(() => wh.verify(h.raw, h.headers)).not.toThrow();
  }, 150_000);
});
