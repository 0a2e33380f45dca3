// @tessera/client: the typed client of the Tessera REST API. The types (schema.d.ts) and the
// operation table (operations.ts) are generated from the OpenAPI document; this file is the thin
// hand-written layer: one method per operationId (`client.ops.listUsers(…)`), the token and
// `Wazo-Tenant` headers, login with Basic credentials, refresh, a boolean token check, and an
// iterator over paginated lists.
import createClient, { type Client, type MaybeOptionalInit } from "openapi-fetch";
import { operations } from "./operations.ts";
import type { components, paths } from "./schema.d.ts";

export type { components, paths };
export { operations };
export type Schemas = components["schemas"];
export type User = Schemas["User"];
export type Tenant = Schemas["Tenant"];
export type Group = Schemas["Group"];
export type Policy = Schemas["Policy"];
export type Session = Schemas["Session"];
export type RefreshToken = Schemas["RefreshToken"];
export type Token = Schemas["Token"];
export type ErrorBody = Schemas["Error"];

type Operations = typeof operations;
export type OperationId = keyof Operations;
type PathOf<K extends OperationId> = Operations[K]["path"];
type MethodOf<K extends OperationId> = Operations[K]["method"];
type OperationOf<K extends OperationId> = paths[PathOf<K>][MethodOf<K>];
/** The request options of an operation: `{ params: { path, query, header }, body }`. */
export type OperationInit<K extends OperationId> = MaybeOptionalInit<paths[PathOf<K>], MethodOf<K>>;
type SuccessCodes = 200 | 201;
type JsonOf<R> = R extends { content: { "application/json": infer J } }
  ? J
  : R extends { content: Record<string, infer C> }
    ? C
    : undefined;
type ResponsesOf<K extends OperationId> = OperationOf<K> extends { responses: infer R } ? R : never;
/** The parsed body of an operation's success answer (`undefined` for 204 answers). */
export type OperationData<K extends OperationId> = {
  [C in keyof ResponsesOf<K>]: C extends SuccessCodes ? JsonOf<ResponsesOf<K>[C]> : never;
}[keyof ResponsesOf<K>] extends infer D
  ? [D] extends [never]
    ? undefined
    : D
  : never;
type InitArgs<K extends OperationId> =
  {} extends OperationInit<K> ? [init?: OperationInit<K>] : [init: OperationInit<K>];
export type OperationMethods = { [K in OperationId]: (...init: InitArgs<K>) => Promise<OperationData<K>> };

/** Operations answering `{items, filtered, total}`. */
export type ListOperationId = {
  [K in OperationId]: OperationData<K> extends { items: unknown[] } ? K : never;
}[OperationId];
export type ItemOf<K extends ListOperationId> = OperationData<K> extends { items: Array<infer I> } ? I : never;

/** A non-2xx answer, with Tessera's error body when it sent one. */
export class TesseraError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | undefined,
    readonly operation: string,
  ) {
    super(`${operation}: ${status}${body ? ` ${body.error_id}: ${body.message}` : ""}`);
    this.name = "TesseraError";
  }
}

export interface TesseraClientOptions {
  /** The service's URL, without `/0.1` (e.g. `http://127.0.0.1:9497`). */
  baseUrl: string;
  /** Sent as `X-Auth-Token`; `login()` sets it. */
  token?: string;
  /** Sent as `Wazo-Tenant` on every request (act in this sub-tenant). */
  tenant?: string;
  fetch?: typeof fetch;
}

export interface LoginOptions {
  username: string;
  password: string;
  /** Seconds. */
  expiration?: number;
  /** `offline` also returns a refresh token (needs `clientId`). */
  accessType?: "online" | "offline";
  clientId?: string;
  /** `mobile` marks the session as a mobile one. */
  sessionType?: string;
  /** The current TOTP code (or a recovery code) of a user with a second factor: else a 401 `mfa-required`. */
  mfaCode?: string;
}

/** `Authorization: Basic` value, UTF-8 encoded (what the service decodes first). */
export function basicAuthorization(username: string, password: string): string {
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `Basic ${btoa(binary)}`;
}

export class TesseraClient {
  /** The generated openapi-fetch client, by path: `client.api.GET("/users/{user_uuid}", …)`. */
  readonly api: Client<paths>;
  /** One method per operationId: `client.ops.listUsers({ params: { query: { search: "ali" } } })`. */
  readonly ops: OperationMethods;
  token: string | undefined;
  tenant: string | undefined;

  constructor(private readonly options: TesseraClientOptions) {
    this.token = options.token;
    this.tenant = options.tenant;
    this.api = createClient<paths>({
      baseUrl: `${options.baseUrl.replace(/\/+$/, "")}/0.1`,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.api.use({
      onRequest: ({ request }) => {
        if (this.token && !request.headers.has("X-Auth-Token") && !request.headers.has("Authorization"))
          request.headers.set("X-Auth-Token", this.token);
        if (this.tenant && !request.headers.has("Wazo-Tenant")) request.headers.set("Wazo-Tenant", this.tenant);
        return request;
      },
    });
    const ops = {} as Record<string, (init?: unknown) => Promise<unknown>>;
    for (const id of Object.keys(operations) as OperationId[])
      ops[id] = (init?: unknown) => this.call(id, init as never);
    this.ops = ops as unknown as OperationMethods;
  }

  /** Calls an operation by its operationId; resolves to the answer's body, rejects with `TesseraError`. */
  async call<K extends OperationId>(id: K, ...init: InitArgs<K>): Promise<OperationData<K>> {
    const { method, path } = operations[id];
    const request = this.api.request as (
      method: string,
      url: string,
      init?: unknown,
    ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const { data, error, response } = await request(method, path, init[0] ?? {});
    if (!response.ok) throw new TesseraError(response.status, isErrorBody(error) ? error : undefined, id);
    return data as OperationData<K>;
  }

  /** The same client acting in `tenant` (`Wazo-Tenant`), sharing the base URL and the token. */
  withTenant(tenant: string | undefined): TesseraClient {
    return new TesseraClient({ ...this.options, token: this.token, tenant });
  }

  /** Logs in with Basic credentials; the new token is used for the next requests. */
  async login(opts: LoginOptions): Promise<Token> {
    const headers: Record<string, string> = { Authorization: basicAuthorization(opts.username, opts.password) };
    if (opts.sessionType) headers["Wazo-Session-Type"] = opts.sessionType;
    const { data } = await this.call("createToken", {
      headers,
      body: {
        expiration: opts.expiration,
        access_type: opts.accessType,
        client_id: opts.clientId,
        mfa_code: opts.mfaCode,
      },
    });
    this.token = data.token;
    return data;
  }

  /** A new access token from a refresh token (an offline login's `refresh_token`). */
  async refresh(opts: { refreshToken: string; clientId: string; expiration?: number }): Promise<Token> {
    const { data } = await this.call("createToken", {
      body: { refresh_token: opts.refreshToken, client_id: opts.clientId, expiration: opts.expiration },
    });
    this.token = data.token;
    return data;
  }

  /**
   * True when `token` is valid (and holds `scope`, and may act in `tenant`): what every service
   * asks before serving a request. False for an unknown, expired or insufficient token; throws
   * only when the service cannot answer.
   */
  async isTokenValid(token: string, opts: { scope?: string; tenant?: string } = {}): Promise<boolean> {
    if (!token) return false;
    try {
      await this.call("checkToken", { params: { path: { token }, query: { scope: opts.scope, tenant: opts.tenant } } });
      return true;
    } catch (e) {
      if (e instanceof TesseraError && [401, 403, 404].includes(e.status)) return false;
      throw e;
    }
  }

  /** Revokes a token (this client's own by default); always succeeds. */
  async revokeToken(token = this.token): Promise<void> {
    if (!token) return;
    await this.call("revokeToken", { params: { path: { token } } });
    if (token === this.token) this.token = undefined;
  }

  /** Every item of a list operation, fetched `pageSize` at a time. */
  async *paginate<K extends ListOperationId>(
    id: K,
    init: OperationInit<K> = {} as OperationInit<K>,
    pageSize = 100,
  ): AsyncGenerator<ItemOf<K>> {
    const base = init as { params?: { query?: Record<string, unknown> } };
    for (let offset = 0; ; offset += pageSize) {
      const page = (await this.call(
        id,
        ...([
          { ...base, params: { ...base.params, query: { ...base.params?.query, limit: pageSize, offset } } },
        ] as unknown as InitArgs<K>),
      )) as { items: ItemOf<K>[] };
      yield* page.items;
      if (page.items.length < pageSize) return;
    }
  }
}

function isErrorBody(value: unknown): value is ErrorBody {
  return typeof value === "object" && value !== null && "error_id" in value;
}

export function createTesseraClient(options: TesseraClientOptions): TesseraClient {
  return new TesseraClient(options);
}
