// Bulk (RFC 7644 §3.7): several Users and Groups operations in one request, each in its own
// transaction (a bulk request is not atomic), answered one by one. `bulkId:<id>` in a later
// operation's path or data names the resource an earlier `POST` of the same request created;
// an operation whose reference is not resolved yet waits for the others (§3.7.1: in any order),
// and one that can never be resolved fails with 409. `failOnErrors` stops after that many errors.
import type { ScimScope } from "./users.ts";
import { createScimUser, deleteScimUser, patchScimUser, replaceScimUser } from "./users.ts";
import { createScimGroup, deleteScimGroup, patchScimGroup, replaceScimGroup } from "./groups.ts";
import { invalidSyntax, invalidValue, ScimError } from "./errors.ts";
import { keyOf } from "./filter-match.ts";
import { BULK_REQUEST_SCHEMA, BULK_RESPONSE_SCHEMA } from "./schemas.ts";

type Json = Record<string, unknown>;

export const MAX_BULK_OPERATIONS = 1000;

interface BulkOp {
  method: "POST" | "PUT" | "PATCH" | "DELETE";
  bulkId: string | null;
  path: string;
  data: unknown;
  version: string | undefined;
}

/** What an error answers in a bulk response: the door's error exit knows the form. */
export type ErrorAnswer = (err: unknown) => { status: number; body: Json };

function opsOf(body: unknown): { ops: BulkOp[]; failOnErrors: number } {
  if (!body || typeof body !== "object" || Array.isArray(body)) throw invalidSyntax("A BulkRequest must be an object");
  const b = body as Json;
  if (!Array.isArray(b.schemas) || !b.schemas.includes(BULK_REQUEST_SCHEMA))
    throw invalidSyntax(`A BulkRequest must name the schema ${BULK_REQUEST_SCHEMA}`);
  const raw = b[keyOf(b, "Operations") ?? "Operations"];
  if (!Array.isArray(raw)) throw invalidSyntax("Operations must be an array");
  if (raw.length > MAX_BULK_OPERATIONS)
    throw new ScimError(413, null, `At most ${MAX_BULK_OPERATIONS} operations per bulk request`);
  const fail = b[keyOf(b, "failOnErrors") ?? "failOnErrors"];
  if (fail !== undefined && (typeof fail !== "number" || !Number.isInteger(fail) || fail < 1))
    throw invalidValue("failOnErrors must be a positive integer");
  const ops = raw.map((o, i): BulkOp => {
    if (!o || typeof o !== "object") throw invalidSyntax(`Operations[${i}] must be an object`);
    const op = o as Json;
    const get = (n: string) => op[keyOf(op, n) ?? n];
    const method = String(get("method") ?? "").toUpperCase();
    if (!["POST", "PUT", "PATCH", "DELETE"].includes(method))
      throw invalidSyntax(`Operations[${i}].method must be POST, PUT, PATCH or DELETE`);
    const path = get("path");
    if (typeof path !== "string") throw invalidSyntax(`Operations[${i}].path is required`);
    const bulkId = get("bulkId");
    if (method === "POST" && (typeof bulkId !== "string" || bulkId === ""))
      throw invalidSyntax(`Operations[${i}]: a POST needs a bulkId`);
    const version = get("version");
    return {
      method: method as BulkOp["method"],
      bulkId: typeof bulkId === "string" ? bulkId : null,
      path,
      data: get("data"),
      version: typeof version === "string" ? version : undefined,
    };
  });
  return { ops, failOnErrors: typeof fail === "number" ? fail : Number.POSITIVE_INFINITY };
}

/** `bulkId:x` references of a value, replaced by the created ids; the ones still unknown. */
function resolve(value: unknown, ids: Map<string, string>, missing: Set<string>): unknown {
  if (typeof value === "string") {
    const m = /^bulkId:(.+)$/.exec(value);
    if (!m) return value;
    const id = ids.get(m[1]!);
    if (id === undefined) missing.add(m[1]!);
    return id ?? value;
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, ids, missing));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, ids, missing)]));
  return value;
}

const ACCESS: Record<string, string> = { POST: "create", PUT: "update", PATCH: "update", DELETE: "delete" };

async function run(
  scope: ScimScope,
  op: BulkOp,
  path: string,
  data: unknown,
): Promise<{ status: number; resource?: Json }> {
  const m = /^\/(Users|Groups)(?:\/([^/]+))?$/.exec(path);
  if (!m || (op.method === "POST") === Boolean(m[2])) throw invalidValue(`unsupported path ${path} for ${op.method}`);
  const kind = m[1] as "Users" | "Groups";
  const access = `auth.scim.${kind.toLowerCase()}.${ACCESS[op.method]}`;
  if (!scope.caller.token.matcher.matches(access)) throw new ScimError(403, null, `The token does not hold ${access}`);
  const id = m[2] ? decodeURIComponent(m[2]) : "";
  const users = kind === "Users";
  switch (op.method) {
    case "POST":
      return { status: 201, resource: await (users ? createScimUser : createScimGroup)(scope, data) };
    case "PUT":
      return { status: 200, resource: await (users ? replaceScimUser : replaceScimGroup)(scope, id, data, op.version) };
    case "PATCH":
      return { status: 200, resource: await (users ? patchScimUser : patchScimGroup)(scope, id, data, op.version) };
    default:
      if (users) await deleteScimUser(scope, id, op.version);
      else await deleteScimGroup(scope, id);
      return { status: 204 };
  }
}

export async function bulk(scope: ScimScope, body: unknown, errorAnswer: ErrorAnswer): Promise<Json> {
  const { ops, failOnErrors } = opsOf(body);
  const ids = new Map<string, string>();
  const results = new Map<number, Json>();
  let errors = 0;
  let pending = ops.map((_, i) => i);
  while (pending.length && errors < failOnErrors) {
    const waiting: number[] = [];
    for (const i of pending) {
      if (errors >= failOnErrors) break;
      const op = ops[i]!;
      const missing = new Set<string>();
      const pathResolved = op.path.replace(/bulkId:([^/]+)/g, (whole, b: string) => {
        const id = ids.get(b);
        if (id === undefined) missing.add(b);
        return id ?? whole;
      });
      const data = resolve(op.data, ids, missing);
      if (missing.size) {
        waiting.push(i);
        continue;
      }
      const base: Json = { method: op.method, ...(op.bulkId ? { bulkId: op.bulkId } : {}) };
      try {
        const done = await run(scope, op, pathResolved, data);
        const meta = done.resource?.meta as { location?: string; version?: string } | undefined;
        if (op.bulkId && done.resource) ids.set(op.bulkId, String(done.resource.id));
        results.set(i, {
          ...base,
          ...(meta?.location ? { location: meta.location } : {}),
          ...(meta?.version ? { version: meta.version } : {}),
          status: String(done.status),
        });
      } catch (e) {
        errors++;
        const answer = errorAnswer(e);
        results.set(i, { ...base, status: String(answer.status), response: answer.body });
      }
    }
    if (waiting.length === pending.length) {
      // References no operation of the request resolves (circular, or to a failed POST): 409.
      for (const i of waiting) {
        if (errors >= failOnErrors) break;
        errors++;
        const op = ops[i]!;
        const answer = errorAnswer(new ScimError(409, "invalidValue", "a bulkId reference cannot be resolved"));
        results.set(i, {
          method: op.method,
          ...(op.bulkId ? { bulkId: op.bulkId } : {}),
          status: String(answer.status),
          response: answer.body,
        });
      }
      break;
    }
    pending = waiting;
  }
  return {
    schemas: [BULK_RESPONSE_SCHEMA],
    Operations: [...results.entries()].sort((a, b) => a[0] - b[0]).map(([, r]) => r),
  };
}
