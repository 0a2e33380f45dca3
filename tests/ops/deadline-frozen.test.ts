// A frozen PostgreSQL (SIGSTOP of a private cluster, never the shared server): every route answers
// within db_timeout (+ a margin) whatever the database does — the fast paths before the router too
// (the token check's lookup of a token memory does not know, introspection once the caches are
// distrusted) — and each door answers its 503 in its own form: OAuth's `temporarily_unavailable`
// on the protocol endpoints, the HTML error page on the browser pages, the JSON body elsewhere.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { adminToken, tokenFor } from "../helpers/fixtures.ts";
import { type ClusterApp, startClusterApp, stopClusterApp } from "../helpers/oidc.ts";
import { pgClusterAvailable } from "../helpers/pg-cluster.ts";
import { allSpecs, fillPath, placeholders, routeName, sampleBody } from "../helpers/route-table.ts";

const DB_TIMEOUT_MS = 1000;
/** db_timeout, the sweeper's tenth of a second, and a loaded machine's scheduling. */
const BOUND_MS = DB_TIMEOUT_MS + 1500;
/** Past this a request is recorded as unanswered (and the test goes on to thaw the server). */
const GIVE_UP_MS = 3 * BOUND_MS;

const OAUTH_PATHS = /^\/0\.1\/oidc\/(token|introspect|revoke|device_authorization|userinfo)(\?|$)/;
const PAGE_PATHS = /^\/0\.1\/oidc\/(authorize(\/consent|\/saml|-mfa)?|logout|device|passkey-sign-in|account)(\?|$)/;

const jsonOf = (text: string): Record<string, unknown> => {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return {};
  }
};

interface Timed {
  name: string;
  /** The door of the route (its declaration's), whose error form a 503 must take. */
  door?: string;
  path: string;
  status: number | "no answer";
  ms: number;
  contentType: string;
  text: string;
}

describe.skipIf(!pgClusterAvailable)("a frozen PostgreSQL: every door answers within db_timeout", () => {
  let env: ClusterApp;
  let t: TestApp;

  beforeAll(async () => {
    env = await startClusterApp();
    t = env.t;
  }, 120_000);
  afterAll(() => stopClusterApp(env ?? {}), 60_000);

  async function timed(
    name: string,
    method: string,
    path: string,
    opts: Parameters<TestApp["request"]>[2] = {},
    door?: string,
  ): Promise<Timed> {
    const started = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), GIVE_UP_MS)));
    const r = await Promise.race([t.request(method, path, opts), late]);
    clearTimeout(timer);
    const ms = performance.now() - started;
    if (!r) return { name, door, path, status: "no answer", ms, contentType: "", text: "" };
    return { name, door, path, status: r.status, ms, contentType: r.headers.get("content-type") ?? "", text: r.text };
  }

  /** What is wrong with an answer: late, a 5xx other than 503, or a 503 not in its door's form. */
  function problem(a: Timed): string | null {
    if (a.status === "no answer" || a.ms > BOUND_MS) return `${a.name}: ${a.status} after ${a.ms.toFixed(0)} ms`;
    if (a.status !== 503) return a.status >= 500 ? `${a.name}: ${a.status}` : null;
    if (a.name.startsWith("HEAD ")) return null; // no body
    // The fast paths are no declared route: their door by path.
    const door = a.door ?? (OAUTH_PATHS.test(a.path) ? "oauth" : PAGE_PATHS.test(a.path) ? "page" : "api");
    if (door === "scim") {
      const body = jsonOf(a.text);
      return Array.isArray(body.schemas) &&
        body.schemas.includes("urn:ietf:params:scim:api:messages:2.0:Error") &&
        body.status === "503"
        ? null
        : `${a.name}: SCIM 503 body ${a.text.slice(0, 120)}`;
    }
    if (door === "oauth") {
      const body = jsonOf(a.text);
      return body.error === "temporarily_unavailable" && typeof body.error_description === "string"
        ? null
        : `${a.name}: OAuth 503 body ${a.text.slice(0, 120)}`;
    }
    if (door === "page")
      return a.contentType.startsWith("text/html") && a.text.includes("Signing in is not possible right now")
        ? null
        : `${a.name}: page 503 as ${a.contentType} ${a.text.slice(0, 120)}`;
    const body = jsonOf(a.text);
    return body.error_id === "service-unavailable" || (a.name === "GET /ready" && body.error_id === "not-ready")
      ? null
      : `${a.name}: REST 503 body ${a.text.slice(0, 120)}`;
  }

  test("every route and both fast paths: within the bound, each 503 in its door's form", async () => {
    const admin = await adminToken(t.app);
    const client = (
      await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: {
          name: "rs",
          client_type: "confidential",
          redirect_uris: ["https://rp.example.com/cb"],
          first_party: true,
        },
      })
    ).json as { client_id: string; client_secret: string };
    const basic = { Authorization: `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}` };
    const form = { ...basic, "Content-Type": "application/x-www-form-urlencoded" };
    const { token } = await tokenFor(t.app, { acl: ["confd.#"] });
    const introspect = () =>
      timed("fast introspection", "POST", "/0.1/oidc/introspect", { headers: form, rawBody: `token=${token}` });
    // Warm: the client, the token and its introspection answer are in memory.
    const warm = await introspect();
    expect([warm.status, JSON.parse(warm.text).active]).toEqual([200, true]);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);

    const oauthForms: Record<string, string> = {
      "/oidc/token": "grant_type=refresh_token&refresh_token=made-up",
      "/oidc/introspect": `token=${crypto.randomUUID()}`,
      "/oidc/revoke": `token=${crypto.randomUUID()}`,
      "/oidc/device_authorization": "scope=openid",
    };
    const unknownClient = crypto.randomUUID();
    env.cluster.freeze();
    const answers: Timed[] = [];
    try {
      // While the caches are still trusted: a token memory does not know costs the fast check one lookup.
      const unknownToken = timed("HEAD fast token check (one lookup)", "HEAD", `/0.1/token/${crypto.randomUUID()}`);
      const sweep = allSpecs(t.app).map((spec) => {
        const values = Object.fromEntries(placeholders(spec.path).map((p) => [p, crypto.randomUUID()]));
        const path = fillPath(spec, { ...values, name: "passkey.js" });
        const method = spec.method.toUpperCase();
        if (spec.bodyType === "form") {
          const rawBody = oauthForms[spec.path] ?? `client_id=${unknownClient}&csrf_token=x`;
          return timed(
            routeName(spec),
            method,
            path,
            {
              headers: OAUTH_PATHS.test(path)
                ? form
                : {
                    "Content-Type": "application/x-www-form-urlencoded",
                  },
              rawBody,
              token: admin,
            },
            spec.door ?? "api",
          );
        }
        const query = path.endsWith("/oidc/authorize")
          ? `?response_type=code&scope=openid&client_id=${unknownClient}&redirect_uri=https%3A%2F%2Frp.example.com%2Fcb`
          : "";
        const body = method === "GET" || method === "HEAD" || method === "DELETE" ? undefined : sampleBody(spec);
        return timed(routeName(spec), method, path + query, { token: admin, body }, spec.door ?? "api");
      });
      answers.push(await unknownToken, ...(await Promise.all(sweep)));
      // The heartbeat misses: the caches are distrusted and introspecting even the cached token needs the database.
      const end = Date.now() + 10_000;
      while (t.app.database.listening() && Date.now() < end) await Bun.sleep(50);
      expect(t.app.database.listening()).toBe(false);
      answers.push(await introspect());
    } finally {
      env.cluster.thaw();
    }
    // Back: the work left behind by the answered requests drains, and the caches are trusted again.
    const end = Date.now() + 30_000;
    while (!t.app.database.listening() && Date.now() < end) await Bun.sleep(50);
    expect(t.app.database.listening()).toBe(true);
    // The pool has worked through the queue the freeze left (a request queued after it is answered).
    while ((await t.request("GET", "/0.1/users", { token: admin })).status !== 200 && Date.now() < end)
      await Bun.sleep(50);
    const problems = answers.map(problem).filter((p) => p !== null);
    expect(problems).toEqual([]);
    const byName = new Map(answers.map((a) => [a.name, a]));
    // The fast paths and the doors the audit saw answer in the wrong form did meet the database.
    expect(byName.get("HEAD fast token check (one lookup)")!.status).toBe(503);
    expect(byName.get("fast introspection")!.status).toBe(503);
    expect(byName.get("POST /oidc/token")!.status).toBe(503);
    expect(byName.get("GET /oidc/authorize")!.status).toBe(503);
    expect(byName.get("GET /users")!.status).toBe(503);
    console.log(
      `frozen: ${answers.length} requests, slowest ${Math.max(...answers.map((a) => a.ms)).toFixed(0)} ms (db_timeout ${DB_TIMEOUT_MS} ms)`,
    );
  }, 90_000);
});
