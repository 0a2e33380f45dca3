// Request fuzzing driven by the served OpenAPI document: every operation gets wrong types, nulls,
// huge and unstorable strings, bad UUIDs, bad paging, extra fields and malformed JSON, with and
// without a token. Generation is fast-check with a fixed seed, so a run is reproducible. Used by
// tests/http/fuzz.test.ts (a bounded run) and scripts/fuzz.ts (`npm run fuzz`, as long as you like).
import fc from "fast-check";
import type { AppContext } from "../../src/boot/context.ts";
import { doorLookup } from "../../src/http/doors.ts";
import type { Door } from "../../src/http/route.ts";
import type { TestApp } from "./app.ts";
import { allSpecs } from "./route-table.ts";

type Json = Record<string, unknown>;

export interface Operation {
  method: string;
  path: string;
  pathParams: Array<{ name: string; schema: Json }>;
  queryParams: Array<{ name: string; schema: Json }>;
  body: Json | null;
  authenticated: boolean;
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Index of the operation it targets, for reports. */
  op: string;
}

export interface FuzzContext {
  /** A token holding `#` in the master tenant (never a target of the generated requests). */
  token: string;
  /** Identifiers of live resources, so some requests reach deep into the handlers. */
  ids: string[];
  /** The live identifiers that fit a parameter, by parameter name (`user_uuid`, `policy`…). */
  byName: Record<string, string[]>;
  /** Tenants the token may name in `Wazo-Tenant`. */
  tenants: string[];
}

/**
 * Operations that end the caller itself whatever they are sent (no identifier to get wrong): the
 * fuzzer's one token would die with its user and every later request be a 401. Their own tests
 * cover them (tests/scim/me.test.ts).
 */
const CALLER_ENDING = new Set(["DELETE /scim/v2/Me"]);

/** The operations of an OpenAPI document as parsed from `GET /0.1/api/api.yml`, but those ending the caller. */
export function operationsOf(doc: { paths: Record<string, Record<string, Json>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (CALLER_ENDING.has(`${method.toUpperCase()} ${path}`)) continue;
      const params = (op.parameters ?? []) as Array<{ name: string; in: string; schema?: Json }>;
      const body = ((op.requestBody as Json | undefined)?.content as Json | undefined)?.["application/json"] as
        | Json
        | undefined;
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === "path").map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        queryParams: params.filter((p) => p.in === "query").map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: body ? ((body.schema as Json) ?? {}) : null,
        authenticated: "x-required-acl" in op,
      });
    }
  }
  return ops;
}

// ---- values ----

/** What the database cannot store or index: the audit's 500s. */
const UNSTORABLE = [
  "a\u0000b",
  "\u0000",
  "bad\ud800surrogate",
  "\udfff",
  "x".repeat(3000),
  "é".repeat(1500),
  "\u{1F600}".repeat(800),
];

const ODD_STRINGS = [
  "",
  " ",
  "<script>alert(1)</script>",
  "' or 1=1 --",
  "%00",
  "../../etc/passwd",
  "a:b",
  "zero\u200bwidth",
  "\ufeffbom",
  "#",
  "*",
  "me",
  "null",
  "true",
  "-1",
  "1e309",
  "00000000-0000-0000-0000-000000000000",
  "6B2A4A8E-5C1F-4A9E-9D44-0D4B3E1C2A11",
  "{6b2a4a8e-5c1f-4a9e-9d44-0d4b3e1c2a11}",
];

/**
 * Dates and times at and past what a PostgreSQL `timestamptz` (and a JavaScript Date) holds: year 0 and
 * 10000+, offsets that push an edge year over, days that do not exist, a leap second, epoch numbers.
 */
const DATE_TIME_EDGES = [
  "0000-01-01T00:00:00Z",
  "0000-12-31",
  "10000-01-01T00:00:00Z",
  "+010000-01-01T00:00:00Z",
  "-000001-01-01T00:00:00Z",
  "0001-01-01T00:00:00+01:00",
  "9999-12-31T23:59:59-01:00",
  "9999-12-31T23:59:59.999999999Z",
  "2026-02-29",
  "2026-04-31T00:00:00Z",
  "2026-13-01",
  "2026-00-10",
  "2016-12-31T23:59:60Z",
  "2026-01-01T24:00:00Z",
  "2026-01-01T00:00:00+24:00",
  "2026-01-01T00:00:00+99:99",
  "2026-01-01T00:00:00-23:59",
  "99999999999999999999",
  "-62198755200",
  "1e308",
  "2026-11-28T06:00:00Z",
  "2024-02-29",
  "0001-01-01T00:00:00Z",
];

const dateTimeText = fc.oneof(
  { arbitrary: fc.constantFrom(...DATE_TIME_EDGES), weight: 4 },
  // Every instant a Date holds, years -271821 to 275760 included.
  { arbitrary: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), weight: 2 },
  { arbitrary: fc.integer({ min: -8_640_000_000_000, max: 8_640_000_000_000 }).map(String), weight: 1 },
);

const nastyString = fc.oneof(
  { arbitrary: fc.constantFrom(...UNSTORABLE), weight: 5 },
  { arbitrary: fc.constantFrom(...ODD_STRINGS), weight: 3 },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 1 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }), weight: 1 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 20 }), weight: 1 },
  { arbitrary: fc.integer({ min: 200, max: 70_000 }).map((n) => "y".repeat(n)), weight: 1 },
);

const nastyNumber = fc.oneof(
  fc.constantFrom(-1, 0, 1, -9007199254740991, 2 ** 53, 2147483648, 1e308, -0, 0.5, 1.5),
  fc.integer(),
  fc.double({ noNaN: true }),
);

const scalar = fc.oneof(nastyString, nastyNumber, fc.boolean(), fc.constant(null));
const anyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { maxDepth: 3 },
    scalar,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 12 }), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** Mostly plausible, sometimes wrong: most requests then break one rule at a time, deep enough to matter. */
const mostly = <T, U>(plausible: fc.Arbitrary<T>, wrong: fc.Arbitrary<U>, odds = 7) =>
  fc.oneof({ arbitrary: plausible, weight: odds }, { arbitrary: wrong, weight: 1 });
const sometimes = <T>(a: fc.Arbitrary<T>, weight = 2) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 5 - Math.min(weight, 4) }, { arbitrary: a, weight });

/** A value for a JSON schema (`name` is the property's, to pick live identifiers that fit). */
function valueFor(schema: Json, ctx: FuzzContext, name = "", depth = 0): fc.Arbitrary<unknown> {
  const wrong = fc.oneof(
    { arbitrary: nastyString, weight: 6 },
    { arbitrary: nastyNumber, weight: 1 },
    { arbitrary: fc.constantFrom(null, true, [], {}), weight: 1 },
    { arbitrary: anyJson, weight: 1 },
  );
  return mostly(plausibleFor(schema, ctx, name, depth), wrong, 4);
}

function plausibleFor(schema: Json, ctx: FuzzContext, name: string, depth: number): fc.Arbitrary<unknown> {
  const variants = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (variants?.length) return fc.oneof(...variants.map((v) => plausibleFor(v, ctx, name, depth)));
  if (Array.isArray(schema.enum) && schema.enum.length) return fc.constantFrom(...(schema.enum as unknown[]));
  switch (schema.type) {
    case "object": {
      if (depth > 3) return fc.constant({});
      const props = (schema.properties ?? {}) as Record<string, Json>;
      const required = new Set((schema.required ?? []) as string[]);
      const fields = Object.fromEntries(
        Object.entries(props).map(([k, v]) => [
          k,
          required.has(k) ? valueFor(v, ctx, k, depth + 1) : sometimes(valueFor(v, ctx, k, depth + 1), 3),
        ]),
      );
      const extras = sometimes(
        fc.dictionary(
          fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("a\u0000", "__proto__", "constructor")),
          anyJson,
          { maxKeys: 2 },
        ),
        1,
      );
      return fc.tuple(fc.record(fields), extras).map(([f, e]) => ({
        ...(e ?? {}),
        ...Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)),
      }));
    }
    case "array":
      return fc.array(valueFor((schema.items ?? {}) as Json, ctx, name, depth + 1), { maxLength: 4 });
    case "integer":
    case "number":
      return fc.integer({
        min: (schema.minimum as number) ?? 0,
        max: Math.min((schema.maximum as number) ?? 100, 1000),
      });
    case "boolean":
      return fc.boolean();
    case "string":
      return plausibleText(name, schema, ctx);
    default:
      return fc.oneof(fc.string({ maxLength: 10 }), fc.constant({}));
  }
}

function plausibleText(name: string, schema: Json, ctx: FuzzContext): fc.Arbitrary<string> {
  const fitting = ctx.byName[name];
  if (fitting)
    return fc.oneof(
      { arbitrary: fc.constantFrom(...fitting), weight: 4 },
      { arbitrary: fc.constantFrom(...ctx.ids), weight: 1 },
    );
  if (schema.format === "email" || name.includes("email") || name === "address") return fc.emailAddress();
  if (isDateTime(name, schema)) return dateTimeText;
  if (schema.format === "uuid" || name.endsWith("uuid")) return fc.oneof(fc.constantFrom(...ctx.ids), fc.uuid());
  return fc.oneof(fc.stringMatching(/^[a-z][a-z0-9_.-]{0,15}$/), fc.constantFrom(...ctx.ids));
}

/** A value for a path segment or query string, as text. */
function textFor(name: string, schema: Json, ctx: FuzzContext): fc.Arbitrary<string> {
  const plausible =
    schema.type === "integer"
      ? fc.integer({ min: (schema.minimum as number) ?? 0, max: 50 }).map(String)
      : schema.type === "boolean"
        ? fc.constantFrom("true", "false", "1", "no")
        : plausibleFor(schema, ctx, name, 0).map((v) => (typeof v === "string" ? v : (JSON.stringify(v) ?? "")));
  return mostly(
    plausible,
    fc.oneof(
      { arbitrary: nastyString, weight: 6 },
      { arbitrary: nastyNumber.map(String), weight: 1 },
      { arbitrary: fc.uuid(), weight: 1 },
    ),
  );
}

/** Percent-encoding that survives lone surrogates (sent as the bytes of their CESU-8 form). */
export function encodeSegment(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return [...s]
      .map((ch) =>
        /[\uD800-\uDFFF]/.test(ch)
          ? `%ED%${(0xa0 + ((ch.charCodeAt(0) >> 6) & 0x1f)).toString(16).toUpperCase()}%${(0x80 + (ch.charCodeAt(0) & 0x3f)).toString(16).toUpperCase()}`
          : encodeURIComponent(ch),
      )
      .join("");
  }
}

const MALFORMED_BODIES = [
  "{",
  "nul",
  "[1,",
  '"unterminated',
  '{"a":}',
  "{'single': 1}",
  "\u0000",
  "[]",
  "42",
  '"text"',
  "null",
  "true",
  " ",
  '{"a":1}{"b":2}',
];

const headerValue = fc.oneof(
  fc.uuid(),
  fc.constantFrom("not-a-uuid", "", "a".repeat(3000), "00000000-0000-0000-0000-000000000000"),
);

function requestFor(op: Operation, ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const params = fc.tuple(...op.pathParams.map((p) => textFor(p.name, p.schema, ctx)));
  const declared = fc.tuple(...op.queryParams.map((p) => sometimes(textFor(p.name, p.schema, ctx), 2)));
  const extraQuery = fc.oneof(
    { arbitrary: fc.constant([]), weight: 4 },
    {
      arbitrary: fc.array(
        fc.tuple(
          fc.oneof(
            fc.string({ maxLength: 8 }),
            fc.constantFrom("limit", "offset", "order", "direction", "search", "recurse", "token", "a\u0000"),
          ),
          nastyString,
        ),
        { minLength: 1, maxLength: 2 },
      ),
      weight: 1,
    },
  );
  const body: fc.Arbitrary<string | undefined> = op.body
    ? fc.oneof(
        { arbitrary: valueFor(op.body, ctx).map((v) => JSON.stringify(v) ?? "null"), weight: 6 },
        { arbitrary: fc.constantFrom(...MALFORMED_BODIES), weight: 1 },
        { arbitrary: fc.constant(undefined), weight: 1 },
      )
    : fc.option(fc.constantFrom('{"unexpected": true}', "{"), { nil: undefined });
  const auth = fc.oneof(
    { arbitrary: fc.constant("admin"), weight: 6 },
    { arbitrary: fc.constantFrom("none", "bogus"), weight: 2 },
  );
  // Mostly no Wazo-Tenant (a bad one stops the request at 401), sometimes a real sub-tenant.
  const tenant = fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 8 },
    { arbitrary: fc.constantFrom(...ctx.tenants), weight: 2 },
    { arbitrary: headerValue, weight: 1 },
  );
  const basic = fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 9 },
    { arbitrary: fc.tuple(nastyString, nastyString), weight: 1 },
  );
  return fc.record({ params, declared, extraQuery, body, auth, tenant, basic }).map((g) => {
    let path = `/0.1${op.path}`;
    for (const [i, p] of op.pathParams.entries()) path = path.replace(`{${p.name}}`, encodeSegment(g.params[i]!));
    const query: string[] = [];
    for (const [i, p] of op.queryParams.entries())
      if (g.declared[i] !== undefined) query.push(`${encodeSegment(p.name)}=${encodeSegment(g.declared[i]!)}`);
    for (const [k, v] of g.extraQuery) query.push(`${encodeSegment(k)}=${encodeSegment(v)}`);
    if (query.length) path += `?${query.join("&")}`;
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (g.auth === "admin") headers["X-Auth-Token"] = ctx.token;
    if (g.auth === "bogus") headers["X-Auth-Token"] = "not-a-token";
    if (g.tenant !== undefined) headers["Wazo-Tenant"] = g.tenant;
    if (g.basic)
      headers.Authorization = `Basic ${Buffer.from(`${g.basic[0]}:${g.basic[1]}`, "utf8").toString("base64")}`;
    return {
      method: op.method,
      path,
      headers,
      body: op.method === "GET" || op.method === "HEAD" ? undefined : g.body,
      op: `${op.method} ${op.path}`,
    };
  });
}

const isDateTime = (name: string, schema: Json) =>
  name === "since" || name === "until" || JSON.stringify(schema).includes('"format":"date-time"');

/**
 * Every edge date and time in every date-time query parameter of every operation, one request each
 * (the other parameters left out): the random run reaches a given parameter too rarely to try them all.
 */
export function dateTimeRequests(ops: Operation[], ctx: FuzzContext): FuzzRequest[] {
  const requests: FuzzRequest[] = [];
  for (const op of ops) {
    if (op.pathParams.length) continue;
    for (const p of op.queryParams.filter((q) => isDateTime(q.name, q.schema)))
      for (const value of DATE_TIME_EDGES)
        requests.push({
          method: op.method,
          path: `/0.1${op.path}?${encodeSegment(p.name)}=${encodeSegment(value)}`,
          headers: { "Content-Type": "application/json", "X-Auth-Token": ctx.token },
          op: `${op.method} ${op.path}`,
        });
  }
  return requests;
}

/** `count` requests spread over every operation, reproducible for a given seed. */
export function generateRequests(ops: Operation[], ctx: FuzzContext, count: number, seed: number): FuzzRequest[] {
  const arbitrary = fc.oneof(...ops.map((op) => requestFor(op, ctx)));
  return fc.sample(arbitrary, { seed, numRuns: count });
}

export interface FuzzFinding {
  request: FuzzRequest;
  status: number;
  problem: string;
  body: string;
}

const ERROR_KEYS = ["details", "error_id", "message", "resource", "timestamp"];

/**
 * The error form of the door a request came through (src/http/doors.ts): the SCIM service
 * provider's RFC 7644 §3.12 body, the pages' HTML, OAuth's `{error, error_description}` (RFC 6749
 * §5.2, RFC 6750 §3); undefined for the REST API, whose body is checked below. Input the route
 * pipeline refuses before the protocol handler runs (not a form, NUL in a value) may still get the
 * REST API's body: the caller accepts either.
 */
function protocolErrorProblem(door: Door, text: string): string | null | undefined {
  if (door === "scim") {
    try {
      const body = JSON.parse(text) as Json;
      const keys = Object.keys(body)
        .filter((k) => k !== "scimType")
        .sort();
      return JSON.stringify(keys) === '["detail","schemas","status"]' &&
        JSON.stringify(body.schemas) === '["urn:ietf:params:scim:api:messages:2.0:Error"]' &&
        typeof body.status === "string"
        ? null
        : `SCIM error body keys ${keys.join(",")}`;
    } catch {
      return "SCIM error without a JSON body";
    }
  }
  if (door === "page") return text.startsWith("<!doctype html>") ? null : "page error without its HTML page";
  if (door !== "oauth") return undefined;
  try {
    const body = JSON.parse(text) as Json;
    return typeof body.error === "string" && typeof body.error_description === "string"
      ? null
      : "OAuth error body fields";
  } catch {
    return "OAuth error without a JSON body";
  }
}

/** What is wrong with a response, or null: no 5xx, and every error has the one JSON body (D1 of docs/wazo-auth-differences.md). */
export function responseProblem(method: string, status: number, text: string, door: Door = "api"): string | null {
  if (status >= 500) return "server error";
  if (status < 400 || method === "HEAD") return null;
  const protocol = protocolErrorProblem(door, text);
  if (protocol === null) return null;
  const tessera = tesseraErrorProblem(text);
  return tessera === null ? null : (protocol ?? tessera);
}

function tesseraErrorProblem(text: string): string | null {
  let body: Json;
  try {
    body = JSON.parse(text) as Json;
  } catch {
    return "error without a JSON body";
  }
  const keys = Object.keys(body)
    .filter((k) => k !== "resource_id")
    .sort();
  if (JSON.stringify(keys) !== JSON.stringify(ERROR_KEYS)) return `error body keys ${keys.join(",")}`;
  if (
    typeof body.error_id !== "string" ||
    typeof body.message !== "string" ||
    typeof body.resource !== "string" ||
    typeof body.timestamp !== "number" ||
    typeof body.details !== "object" ||
    body.details === null
  ) {
    return "error body field types";
  }
  return null;
}

export interface FuzzReport {
  findings: FuzzFinding[];
  /** How many responses had each status: a run that only ever sees 401 tests nothing. */
  statuses: Record<number, number>;
}

/**
 * Sends every request through `send` and returns what went wrong; `app`'s route table says which
 * door each request comes through, hence the form its errors must take.
 */
export async function runFuzz(
  app: AppContext,
  requests: FuzzRequest[],
  send: (r: FuzzRequest) => Promise<{ status: number; text: string }>,
): Promise<FuzzReport> {
  const doorOf = doorLookup(allSpecs(app));
  const findings: FuzzFinding[] = [];
  const statuses: Record<number, number> = {};
  for (const request of requests) {
    const { status, text } = await send(request);
    statuses[status] = (statuses[status] ?? 0) + 1;
    const problem = responseProblem(request.method, status, text, doorOf(request.method, request.path.split("?")[0]!));
    if (problem) findings.push({ request, status, problem, body: text.slice(0, 300) });
  }
  return { findings, statuses };
}

/** Live resources whose identifiers the generator uses, so requests also reach deep into handlers. */
export async function seedResources(t: TestApp, token: string): Promise<FuzzContext> {
  const tenant = (await t.request("POST", "/0.1/tenants", { token, body: { name: "fuzz", slug: "fuzz" } })).json
    .uuid as string;
  const user = (
    await t.request("POST", "/0.1/users", {
      token,
      tenant,
      body: { username: "fuzzed", password: "pw", email_address: "fuzzed@example.com" },
    })
  ).json;
  const group = (await t.request("POST", "/0.1/groups", { token, tenant, body: { name: "fuzz-group" } })).json
    .uuid as string;
  const policy = (
    await t.request("POST", "/0.1/policies", {
      token,
      tenant,
      body: { name: "fuzz-policy", slug: "fuzz_policy", acl: ["confd.#"] },
    })
  ).json.uuid as string;
  const login = await t.request("POST", "/0.1/token", {
    body: { access_type: "offline", client_id: "fuzz-app" },
    headers: { Authorization: `Basic ${btoa("fuzzed:pw")}` },
  });
  if (login.status !== 200) throw new Error(`fuzz fixtures: login failed (${login.status})`);
  const session = login.json.data.session_uuid as string;
  const byName: Record<string, string[]> = {
    tenant_uuid: [tenant, t.app.topTenantUuid],
    parent_tenant_uuid: [t.app.topTenantUuid, tenant],
    user_uuid: [user.uuid],
    email_uuid: [user.emails[0].uuid],
    group_uuid: [group],
    policy: [policy, "fuzz_policy"],
    policy_uuid: [policy],
    session_uuid: [session],
    token: [login.json.data.token],
    client_id: ["fuzz-app"],
    auth_type: ["google", "mobile", "microsoft"],
    idp_type: ["native", "default"],
    access: ["confd.#", "confd.users.read"],
    username: ["fuzzed"],
    login: ["fuzzed", "fuzzed@example.com"],
    email: ["fuzzed@example.com"],
    order: ["name", "username", "uuid"],
  };
  return { token, tenants: [tenant], byName, ids: [...new Set(Object.values(byName).flat()), "me"] };
}
