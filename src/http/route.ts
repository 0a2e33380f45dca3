// Declaring a route once gives both the Hono handler and its OpenAPI entry. The wrapper applies
// the same pipeline everywhere: path params (404 when malformed, D7 of docs/wazo-auth-differences.md) → token, ACL and tenant →
// query → JSON body → handler. Handlers receive validated, typed input.
import { Hono, type Context } from "hono";
import type { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { authenticate, requestToken, requiredAccess, resolveCaller } from "./auth.ts";
import { requestOrigin } from "./request-origin.ts";
import type { Caller } from "../domain/caller.ts";
import { requireCanonicalAccess } from "./canonical-acl.ts";
import { ApiError, InvalidData, NotFound, Unauthorized } from "../domain/errors.ts";
import { MAX_BODY_BYTES, tooLarge } from "./limits.ts";
import { setDetail, zodDetails } from "../domain/validate.ts";
import { databaseFailure } from "../db/failures.ts";
import { CAPS, jsonBodyProblems, stringProblem } from "../domain/strings.ts";

export type Method = "get" | "post" | "put" | "delete" | "patch" | "head";

/** Where a request comes in, which decides the form of its errors (doors.ts). */
export type Door = "api" | "oauth" | "page" | "scim";

export interface Env {
  Variables: { app: AppContext };
  Bindings: { remoteAddr?: string };
}

type Schema = z.ZodType;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteOptions<
  P extends Schema | undefined,
  Q extends Schema | undefined,
  B extends Schema | undefined,
> {
  summary: string;
  description?: string;
  /** OpenAPI operationId (and client method name); derived from method and path when absent. */
  operationId?: string;
  /** Required access with `{param}` placeholders; absent = no authentication. */
  acl?: string;
  /** Only tokens of the master tenant may call (checked on `metadata.tenant_uuid`). */
  topTenantOnly?: boolean;
  /** Read the token from `?token=` before the headers (email confirmation, password reset). */
  tokenFromQuery?: boolean;
  /** Skip `Wazo-Tenant` resolution (routes that need no tenant, e.g. token-only endpoints). */
  noTenant?: boolean;
  params?: P;
  query?: Q;
  body?: B;
  /** How the body is read: JSON whatever the Content-Type (default), or an HTML form (multipart or urlencoded; files stay `File`s). */
  bodyType?: "json" | "form";
  /** An empty JSON body reads as `{}`: a body only some callers send (a self-service removal's proof). */
  bodyOptional?: boolean;
  /** Path parameters that carry a value rather than name a resource: an unstorable one is a 400, not a 404. */
  valueParams?: string[];
  /** Headers the route reads, for the OpenAPI document (name → description). */
  headers?: Record<string, string>;
  responses: Record<number, string | { description: string; schema?: Schema; contentType?: string }>;
  /**
   * wazo-auth answers this PUT with 200 and the resource, where Tessera answers 204 (D3 of docs/wazo-auth-differences.md). Under
   * `compatibility.put_responses: wazo` the pipeline answers wazo-auth's way instead, reading the
   * resource back with `read` after the write. Declared once per route; the handler is unchanged.
   */
  wazoPutAnswer?: { description: string; read: (input: RouteInput<Out<P>, Out<Q>, Out<B>>) => Promise<unknown> };
  /** The door whose error form the route answers in, when not its group's (a page's JSON helper). */
  door?: Door;
  /** Answer this when the caller cannot be authenticated because the database is unavailable. */
  whenDatabaseDown?: (c: Context<Env>, app: AppContext) => Response | Promise<Response>;
}

export interface RouteInput<P, Q, B> {
  c: Context<Env>;
  app: AppContext;
  params: P;
  query: Q;
  body: B;
  /** Present on authenticated routes. */
  caller: Caller;
}

export interface RouteSpec extends RouteOptions<Schema | undefined, Schema | undefined, Schema | undefined> {
  method: Method;
  path: string;
  tag: string;
}

type Handler<P, Q, B> = (input: RouteInput<P, Q, B>) => Response | Promise<Response>;

export class RouteGroup {
  // `strict: false`: `/users/` is `/users` (a trailing slash never turns a route into a 405 or 404).
  readonly hono = new Hono<Env>({ strict: false });
  readonly specs: RouteSpec[] = [];

  /**
   * `resource` names the kind of resource in error bodies and tags the OpenAPI entries; `door`, the
   * form of every error of the group's routes (doors.ts).
   */
  constructor(
    readonly resource: string,
    readonly door: Door = "api",
  ) {}

  add<
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(method: Method, path: string, opts: RouteOptions<P, Q, B>, handler: Handler<Out<P>, Out<Q>, Out<B>>): this {
    this.specs.push({
      ...(opts as RouteOptions<Schema | undefined, Schema | undefined, Schema | undefined>),
      method,
      path,
      tag: this.resource,
      door: opts.door ?? this.door,
    });
    const honoPath = path.replace(/\{(\w+)\}/g, ":$1");
    const resource = this.resource;
    // Hono answers HEAD with the GET handler; a declared HEAD route takes HEAD requests first.
    const honoMethod = method === "head" ? "GET" : method.toUpperCase();
    this.hono.on(honoMethod, honoPath, async (c, next) => {
      if (method === "head" && c.req.method !== "HEAD") return next();
      const app = c.get("app");
      const rawParams = c.req.param() as Record<string, string>;
      checkPathSegments(rawParams, opts.valueParams, resource);
      const params = opts.params ? parseParams(opts.params, rawParams, resource, opts.valueParams) : undefined;
      // ACL placeholders come from the path, or else the query (`?user_uuid=` of the password reset).
      const aclParams =
        opts.acl !== undefined ? { ...c.req.query(), ...((params ?? rawParams) as Record<string, string>) } : {};
      let caller = undefined as unknown as Caller;
      if (opts.acl !== undefined) {
        try {
          caller = await authorize(c, app, opts, aclParams);
        } catch (e) {
          if (
            opts.whenDatabaseDown &&
            (databaseFailure(e) || (e instanceof ApiError && e.status === 401 && !(await databaseAnswers(app))))
          )
            return opts.whenDatabaseDown(c, app);
          throw e;
        }
      }
      const rawQuery = queryObject(c);
      checkQueryValues(rawQuery, resource);
      const query = opts.query ? parseWith(opts.query, rawQuery, resource) : undefined;
      const raw = opts.body
        ? opts.bodyType === "form"
          ? await readForm(c, resource)
          : await readJson(c, resource, opts.bodyOptional)
        : undefined;
      const body = opts.body ? parseWith(opts.body, raw, resource) : undefined;
      const input = { c, app, params: params as Out<P>, query: query as Out<Q>, body: body as Out<B>, caller };
      const res = await handler(input);
      if (opts.wazoPutAnswer && res.status === 204 && app.config.compatibility.put_responses === "wazo")
        return c.json((await opts.wazoPutAnswer.read(input)) as object, 200);
      return res;
    });
    return this;
  }

  get<
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(path: string, opts: RouteOptions<P, Q, B>, handler: Handler<Out<P>, Out<Q>, Out<B>>) {
    return this.add("get", path, opts, handler);
  }
  head<
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(path: string, opts: RouteOptions<P, Q, B>, handler: Handler<Out<P>, Out<Q>, Out<B>>) {
    return this.add("head", path, opts, handler);
  }
  post<
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(path: string, opts: RouteOptions<P, Q, B>, handler: Handler<Out<P>, Out<Q>, Out<B>>) {
    return this.add("post", path, opts, handler);
  }
  put<
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(path: string, opts: RouteOptions<P, Q, B>, handler: Handler<Out<P>, Out<Q>, Out<B>>) {
    return this.add("put", path, opts, handler);
  }
  delete<
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(path: string, opts: RouteOptions<P, Q, B>, handler: Handler<Out<P>, Out<Q>, Out<B>>) {
    return this.add("delete", path, opts, handler);
  }
  patch<
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(path: string, opts: RouteOptions<P, Q, B>, handler: Handler<Out<P>, Out<Q>, Out<B>>) {
    return this.add("patch", path, opts, handler);
  }
}

async function authorize(
  c: Context<Env>,
  app: AppContext,
  opts: RouteOptions<Schema | undefined, Schema | undefined, Schema | undefined>,
  params: Record<string, string>,
): Promise<Caller> {
  const access = requiredAccess(opts.acl!, params);
  const tok = await authenticate(app, requestToken(c, opts.tokenFromQuery), access);
  if (opts.topTenantOnly && tok.metadata.tenant_uuid !== app.topTenantUuid) {
    throw new Unauthorized({ reason: "not_top_tenant", required_access: access });
  }
  let caller: Caller;
  if (opts.noTenant) {
    const userUuid = typeof tok.metadata.uuid === "string" ? tok.metadata.uuid : null;
    const tenant = typeof tok.metadata.tenant_uuid === "string" ? tok.metadata.tenant_uuid : null;
    caller = { token: tok, userUuid, tenantUuid: tenant, ownTenantUuid: tenant };
  } else {
    caller = await resolveCaller(app, tok, c.req.header("Wazo-Tenant"));
  }
  await requireCanonicalAccess(app, caller, opts.acl!, params);
  caller.origin = {
    address: requestOrigin(c, app.config.rest_api.trusted_proxies).address,
    userAgent: c.req.header("User-Agent") ?? "",
  };
  return caller;
}

/** The spec as the server answers it: under `put_responses: wazo`, 200 with the resource instead of 204. */
export function asAnswered(spec: RouteSpec, putResponses: "empty" | "wazo"): RouteSpec {
  if (!spec.wazoPutAnswer || putResponses !== "wazo") return spec;
  const { 204: _empty, ...others } = spec.responses;
  return { ...spec, responses: { 200: spec.wazoPutAnswer.description, ...others } };
}

function parseParams(
  schema: Schema,
  raw: Record<string, string>,
  resource: string,
  valueParams: string[] = [],
): unknown {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  if (result.error.issues.every((i) => valueParams.includes(String(i.path[0]))))
    throw new InvalidData(resource, zodDetails(result.error, schema, raw));
  throw new NotFound(resource, undefined, "Not found");
}

/** Every path segment, whatever the route's schema: unstorable → 404 (it names nothing, D7 of docs/wazo-auth-differences.md) or 400. */
function checkPathSegments(raw: Record<string, string>, valueParams: string[] | undefined, resource: string): void {
  for (const [name, value] of Object.entries(raw)) {
    const problem = stringProblem(value, CAPS.pathSegment);
    if (!problem) continue;
    if (valueParams?.includes(name)) throw new InvalidData(resource, { [name]: problem });
    throw new NotFound(resource, undefined, "Not found");
  }
}

/** Every query value and key, declared by the route or not (handlers may read the raw query). */
function checkQueryValues(query: Record<string, string | string[]>, resource: string): void {
  const details: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    const keyProblem = stringProblem(key, CAPS.pathSegment);
    if (keyProblem) {
      details._schema = { ...keyProblem, message: `Invalid query parameter name: ${keyProblem.message}` };
      continue;
    }
    for (const v of Array.isArray(value) ? value : [value]) {
      const problem = stringProblem(v, CAPS.queryValue);
      if (problem) details[key] = problem;
    }
  }
  if (Object.keys(details).length) throw new InvalidData(resource, details);
}

function parseWith(schema: Schema, input: unknown, resource: string): unknown {
  const result = schema.safeParse(input);
  if (!result.success) throw new InvalidData(resource, zodDetails(result.error, schema, input));
  return result.data;
}

/** Query string as an object: a key given once is a string, given several times an array. */
export function queryObject(c: Context): Record<string, string | string[]> {
  const all = c.req.queries();
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(all)) out[k] = v.length === 1 ? v[0]! : v;
  return out;
}

/** The body as JSON whatever the Content-Type (wazo-auth's "force" parsing); `null` counts as `{}`. */
export async function readJson(c: Context, resource: string, optional = false): Promise<unknown> {
  const text = await c.req.text();
  if (text.length > MAX_BODY_BYTES) throw tooLarge(c.req.path);
  if (optional && text.trim() === "") return {};
  if (text.trim() === "") throw malformed(resource, "The request body is empty; a JSON document is required.");
  let value: unknown;
  try {
    value = JSON.parse(text) ?? {};
  } catch {
    throw malformed(resource, "The request body is not valid JSON.");
  }
  const problems = jsonBodyProblems(value);
  if (problems.length) throw new InvalidData(resource, nestedDetails(problems));
  return value;
}

/** `[{path: ["a", "0", "b"], problem}]` → `{a: {"0": {b: problem}}}` (docs/api.md nesting). */
function nestedDetails(problems: ReturnType<typeof jsonBodyProblems>): Record<string, unknown> {
  const details: Record<string, unknown> = {};
  for (const { path, problem } of problems) setDetail(details, path, () => problem);
  return details;
}

/** An HTML form body (multipart/form-data or urlencoded) as an object; a field sent twice keeps the last value. */
export async function readForm(c: Context, resource: string): Promise<Record<string, unknown>> {
  const type = c.req.header("Content-Type") ?? "";
  if (!/^(multipart\/form-data|application\/x-www-form-urlencoded)/i.test(type)) {
    throw new InvalidData(resource, {
      _schema: {
        constraint_id: "form",
        constraint: "multipart/form-data",
        message: "The request body must be a form (multipart/form-data or application/x-www-form-urlencoded).",
      },
    });
  }
  try {
    return (await c.req.parseBody()) as Record<string, unknown>;
  } catch {
    throw new InvalidData(resource, {
      _schema: {
        constraint_id: "form",
        constraint: "multipart/form-data",
        message: "The request body is not a readable form.",
      },
    });
  }
}

function malformed(resource: string, message: string): InvalidData {
  return new InvalidData(resource, { _schema: { constraint_id: "json", constraint: "application/json", message } });
}

/**
 * For a route with `whenDatabaseDown`: a caller refused (401) without the database being asked (no
 * token) gets the outage answer too while the database is down, as one whose token could not be
 * checked does — the same probe, bounded by half of `db_timeout`, that `HEAD /status` makes for anyone.
 */
async function databaseAnswers(app: AppContext): Promise<boolean> {
  return app.database.ping(Math.max(100, Math.round(app.config.db_timeout * 500)));
}
