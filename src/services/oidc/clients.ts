// OpenID Connect clients (relying parties), administered per tenant like every other resource.
// A confidential client's secret is shown once, at creation, and stored as a SHA-256 digest; a
// public client has none and must use PKCE S256 (RFC 7636 §4.2, RFC 9700 §2.1.1).
import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { and, asc, desc, eq, ilike, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { oidcAccessTokens, oidcClients, refreshTokens, sessions, users } from "../../db/schema.ts";
import { purgeRefreshToken } from "../auth/refresh-tokens.ts";
import { revokeSessions } from "../auth/sessions.ts";
import { listPage } from "../../db/paging.ts";
import { afterCommit, inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, searchPattern, type Collection, type ListParams } from "../../domain/collection.ts";
import { InvalidData, NotFound, orAbsent } from "../../domain/errors.ts";
import { isUuid } from "../../domain/validate.ts";
import { publishEvent, routingKey } from "../events.ts";
import { type AuditActor, recordAudit, resourceAudit } from "../audit/record.ts";
import { inCallerScope, tenantVisible } from "../identity/visibility.ts";
import { requireGrant } from "../identity/policies.ts";
import type { SigningAlg } from "./keys.ts";
import { isInsecureRedirectUri } from "./redirect-uris.ts";
import {
  logoutMetadataJson,
  logoutMetadataValues,
  type LogoutMetadataInput,
  type LogoutMetadataJson,
} from "./logout-metadata.ts";
import { outboundPolicy, urlRefusal } from "../outbound/fetch.ts";
import { jwksProblem } from "./request-object.ts";

export type ClientRow = typeof oidcClients.$inferSelect;
export type ClientType = "confidential" | "public";

/** A client's grants by default; which names a client may list is the registry's (grants/index.ts). */
export const DEFAULT_GRANT_TYPES: string[] = ["authorization_code", "refresh_token"];
export const DEFAULT_SCOPES = ["openid", "profile", "email", "offline_access"];

export interface ClientInput extends LogoutMetadataInput {
  name: string;
  client_type: ClientType;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types?: string[];
  scopes?: string[];
  first_party: boolean;
  /** Plain http redirect URIs off loopback (RFC 6749 §3.1.2.1), for development; absent: false, or kept on update. */
  allow_insecure_redirects?: boolean;
  id_token_signed_response_alg?: SigningAlg;
  access_token_lifetime?: number | null;
  id_token_lifetime?: number | null;
  refresh_token_lifetime?: number | null;
  /** The ACL of the client's own tokens (client credentials grant); only what the caller may grant. */
  acl?: string[];
  /** RFC 9126 §6: only pushed authorization requests (absent: false, or kept on update). */
  require_pushed_authorization_requests?: boolean;
  /** RFC 9449 §5.2: DPoP-bound access tokens only (absent: false, or kept on update). */
  dpop_bound_access_tokens?: boolean;
  /** RFC 7591 §2: the keys that sign the client's request objects (RFC 9101), by value or by URL (absent: none, or kept on update). */
  jwks?: { keys: Record<string, unknown>[] } | null;
  jwks_uri?: string | null;
}

/** What PUT may change: everything but the client type (a secret cannot appear or vanish by update). */
export type ClientUpdate = Omit<ClientInput, "client_type">;

export interface ClientJson extends LogoutMetadataJson {
  client_id: string;
  tenant_uuid: string;
  name: string;
  client_type: ClientType;
  /** RFC 7591 §2: how the client authenticates at the token endpoint. */
  token_endpoint_auth_methods: string[];
  pkce_required: boolean;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  scopes: string[];
  first_party: boolean;
  allow_insecure_redirects: boolean;
  id_token_signed_response_alg: string;
  access_token_lifetime: number | null;
  id_token_lifetime: number | null;
  refresh_token_lifetime: number | null;
  acl: string[];
  created_at: string;
  /** RFC 9126 §6. */
  require_pushed_authorization_requests: boolean;
  /** RFC 9449 §5.2. */
  dpop_bound_access_tokens: boolean;
  /** RFC 7591 §2: the keys of the client's request objects (RFC 9101). */
  jwks: { keys: Record<string, unknown>[] } | null;
  jwks_uri: string | null;
  /** Registered by the client itself (RFC 7591) with the initial access token `registered_with`. */
  self_registered: boolean;
  registered_with: string | null;
}

export function clientJson(r: ClientRow): ClientJson {
  const confidential = r.clientType === "confidential";
  return {
    client_id: r.clientId,
    tenant_uuid: r.tenantUuid,
    name: r.name,
    client_type: r.clientType as ClientType,
    token_endpoint_auth_methods: confidential ? ["client_secret_basic", "client_secret_post"] : ["none"],
    pkce_required: !confidential,
    redirect_uris: r.redirectUris,
    post_logout_redirect_uris: r.postLogoutRedirectUris,
    grant_types: r.grantTypes,
    scopes: r.scopes,
    first_party: r.firstParty,
    allow_insecure_redirects: r.allowInsecureRedirects,
    id_token_signed_response_alg: r.idTokenSignedResponseAlg,
    access_token_lifetime: r.accessTokenLifetime,
    id_token_lifetime: r.idTokenLifetime,
    refresh_token_lifetime: r.refreshTokenLifetime,
    acl: r.acl,
    ...logoutMetadataJson(r),
    created_at: r.createdAt.toISOString(),
    require_pushed_authorization_requests: r.requirePushedAuthorizationRequests,
    dpop_bound_access_tokens: r.dpopBoundAccessTokens,
    jwks: r.jwks ?? null,
    jwks_uri: r.jwksUri ?? null,
    self_registered: r.registrationTokenHash !== null,
    registered_with: r.registeredWith ?? null,
  };
}

/**
 * How long a client read for client authentication is reused. The token, introspection and
 * revocation endpoints authenticate the client on every request; reading it once per interval keeps
 * them off the database. A change to a client (an update, a deletion, a tenant's deletion, a new
 * secret) is announced by the database on commit (`tessera_oidc_changed`, migration 0027) and drops
 * the entry on every instance at once (`forgetClient`); this interval is only the backstop.
 */
export const CLIENT_CACHE_MS = 5_000;

interface ClientCache {
  entries: Map<string, { row: ClientRow | null; at: number }>;
  /** Bumped by every change heard: a read begun before it is not kept (it may be the old row). */
  epoch: number;
}
const clientCaches = new WeakMap<AppContext, ClientCache>();
const clientCacheOf = (app: AppContext) =>
  clientCaches.get(app) ?? clientCaches.set(app, { entries: new Map(), epoch: 0 }).get(app)!;

/**
 * The client by id for client authentication (read at most once per CLIENT_CACHE_MS); null when
 * unknown. While notifications may be missed the cache is not used (as the token cache, whose trust
 * it shares): every authentication reads the row.
 */
export async function clientForAuthentication(app: AppContext, clientId: string): Promise<ClientRow | null> {
  const cache = clientCacheOf(app);
  const trusted = app.tokenCache.isTrusted;
  const hit = cache.entries.get(clientId);
  if (trusted && hit && Date.now() - hit.at < CLIENT_CACHE_MS) return hit.row;
  const epoch = cache.epoch;
  const [row] = await app.db.select().from(oidcClients).where(eq(oidcClients.clientId, clientId));
  if (trusted && app.tokenCache.isTrusted && cache.epoch === epoch) {
    if (cache.entries.size >= 10_000) cache.entries.clear(); // bounded: made-up ids cannot grow it without end
    cache.entries.set(clientId, { row: row ?? null, at: Date.now() });
  }
  return row ?? null;
}

/**
 * A client changed (`clientId`), or any may have (null: notifications were missed): its cached row
 * goes, with the verified secrets that point at it, and reads under way are not kept.
 */
export function forgetClient(app: AppContext, clientId: string | null): void {
  const cache = clientCacheOf(app);
  cache.epoch++;
  if (clientId === null) cache.entries.clear();
  else cache.entries.delete(clientId);
}

/**
 * Verified `client_secret_basic` headers (RFC 6749 §2.3.1), each with the client row it was
 * verified against: a resource server introspecting sends the same header on every request, and
 * this spares it the Basic decoding and the secret's digest. An entry holds only while its row is
 * the cached one — a change, a deletion or the periodic re-read replaces the row, and the next
 * request verifies the secret again. Looked up by the whole header (a hash lookup, no prefix
 * comparison to time); only successful verifications enter; bounded; this process's memory only.
 */
const verifiedHeaders = new WeakMap<AppContext, Map<string, ClientRow>>();
const verifiedHeadersOf = (app: AppContext) =>
  verifiedHeaders.get(app) ?? verifiedHeaders.set(app, new Map()).get(app)!;

/** The client an Authorization header was verified for, while its row is still the cached one. */
export function verifiedBasicClient(app: AppContext, authorization: string): ClientRow | null {
  const row = verifiedHeadersOf(app).get(authorization);
  if (!row || !app.tokenCache.isTrusted) return null;
  const hit = clientCacheOf(app).entries.get(row.clientId);
  return hit?.row === row && Date.now() - hit.at < CLIENT_CACHE_MS ? row : null;
}

export function rememberVerifiedBasic(app: AppContext, authorization: string, row: ClientRow): void {
  const memo = verifiedHeadersOf(app);
  if (memo.size >= 1_000) memo.clear();
  memo.set(authorization, row);
}

/** After a local change, the next authentication reads the client again (once committed, without waiting for the notice). */
export const forgetAfterCommit = (app: AppContext, tx: DbOrTx, clientId: string) =>
  afterCommit(tx, () => forgetClient(app, clientId));

export const hashClientSecret = (secret: string) => createHash("sha256").update(secret).digest("hex");

/** Constant-time comparison of a presented secret with the stored digest. */
export function clientSecretMatches(row: ClientRow, presented: string): boolean {
  if (!row.secretHash) return false;
  return timingSafeEqual(Buffer.from(hashClientSecret(presented), "hex"), Buffer.from(row.secretHash, "hex"));
}

/**
 * RFC 6749 §3.1.2.1: the redirect carries the code or token, so TLS protects it; plain http only on a
 * loopback IP literal (RFC 8252 §7.3), or anywhere with the client's explicit `allow_insecure_redirects`.
 */
function checkRedirectSecurity(input: ClientUpdate, allowInsecure: boolean): void {
  if (allowInsecure) return;
  for (const field of ["redirect_uris", "post_logout_redirect_uris"] as const) {
    const insecure = input[field].find(isInsecureRedirectUri);
    if (insecure !== undefined)
      throw new InvalidData("oidc_clients", {
        [field]: {
          constraint_id: "https_required",
          constraint: insecure,
          message:
            "A plain http redirect URI is allowed on 127.0.0.1 or [::1] only (RFC 6749 §3.1.2.1, RFC 8252 §7.3); set allow_insecure_redirects for development.",
        },
      });
  }
}

/** Rules across fields that a field's schema cannot say; each names its specification. */
function checkCombination(type: ClientType, grants: string[], redirectUris: string[]): void {
  // RFC 6749 §4.4: the client credentials grant is for confidential clients only.
  if (type === "public" && grants.includes("client_credentials")) {
    throw new InvalidData("oidc_clients", {
      grant_types: {
        constraint_id: "confidential_only",
        constraint: "client_credentials",
        message: "A public client cannot use the client_credentials grant (RFC 6749 §4.4).",
      },
    });
  }
  // RFC 8693 §2.1: a token exchange authenticates its client; Tessera's allows confidential ones only.
  if (type === "public" && grants.includes("urn:ietf:params:oauth:grant-type:token-exchange")) {
    throw new InvalidData("oidc_clients", {
      grant_types: {
        constraint_id: "confidential_only",
        constraint: "urn:ietf:params:oauth:grant-type:token-exchange",
        message: "A public client cannot use the token exchange grant.",
      },
    });
  }
  // RFC 6749 §3.1.2.2: clients of the authorization endpoint must register their redirect URIs.
  if (grants.includes("authorization_code") && redirectUris.length === 0) {
    throw new InvalidData("oidc_clients", {
      redirect_uris: {
        constraint_id: "required",
        constraint: "authorization_code",
        message: "The authorization_code grant needs at least one redirect URI (RFC 6749 §3.1.2.2).",
      },
    });
  }
  // The refresh grant only renews what another grant issued.
  if (grants.length === 1 && grants[0] === "refresh_token") {
    throw new InvalidData("oidc_clients", {
      grant_types: {
        constraint_id: "refresh_alone",
        constraint: "refresh_token",
        message: "refresh_token needs another grant that issues the first token.",
      },
    });
  }
}

export function rowValues(input: ClientUpdate, type: ClientType, allowInsecureRedirects: boolean) {
  const grants = [...new Set(input.grant_types ?? DEFAULT_GRANT_TYPES)];
  checkCombination(type, grants, input.redirect_uris);
  checkRedirectSecurity(input, allowInsecureRedirects);
  return {
    name: input.name,
    redirectUris: [...new Set(input.redirect_uris)],
    postLogoutRedirectUris: [...new Set(input.post_logout_redirect_uris)],
    grantTypes: grants,
    scopes: [...new Set(input.scopes ?? DEFAULT_SCOPES)],
    firstParty: input.first_party,
    allowInsecureRedirects,
    accessTokenLifetime: input.access_token_lifetime ?? null,
    idTokenLifetime: input.id_token_lifetime ?? null,
    refreshTokenLifetime: input.refresh_token_lifetime ?? null,
    acl: [...new Set(input.acl ?? [])],
    requirePushedAuthorizationRequests: input.require_pushed_authorization_requests ?? false,
    dpopBoundAccessTokens: input.dpop_bound_access_tokens ?? false,
    jwks: input.jwks ?? null,
    jwksUri: input.jwks_uri ?? null,
  };
}

/**
 * RFC 7591 §2: `jwks` and `jwks_uri` are exclusive, and the URL is one the outbound guard would call
 * (the client or its administrator chose it: services/outbound/fetch.ts).
 */
export function checkClientKeys(app: AppContext, input: Pick<ClientInput, "jwks" | "jwks_uri">): void {
  const fail = (field: string, constraint: string, message: string) => {
    throw new InvalidData("oidc_clients", { [field]: { constraint_id: constraint, constraint, message } });
  };
  if (input.jwks && input.jwks_uri)
    fail("jwks_uri", "exclusive", "jwks and jwks_uri cannot both be given (RFC 7591 §2).");
  if (input.jwks) {
    const problem = jwksProblem(input.jwks);
    if (problem) fail("jwks", "jwk_set", problem);
  }
  if (input.jwks_uri) {
    const refusal = urlRefusal(input.jwks_uri, outboundPolicy(app.config.outbound_http));
    if (refusal) fail("jwks_uri", "outbound", `jwks_uri ${refusal}`);
  }
}

export function clientEvent(app: AppContext, tx: DbOrTx, action: "created" | "updated" | "deleted", r: ClientRow) {
  return publishEvent(app, tx, {
    name: `auth_oidc_client_${action}`,
    routingKey: routingKey(`auth.oidc.clients.{client_id}.${action}`, { client_id: r.clientId }),
    // Never the secret's digest: events go to every daemon on the bus.
    data: { client_id: r.clientId, tenant_uuid: r.tenantUuid, name: r.name, client_type: r.clientType },
    tenantUuid: r.tenantUuid,
    userUuid: "*",
    aggregate: `oidc_client:${r.clientId}`,
  });
}

export const clientTarget = (r: ClientRow) => ({ kind: "oidc_client", uuid: r.clientId, tenantUuid: r.tenantUuid });

export async function createClient(
  app: AppContext,
  caller: Caller,
  input: ClientInput,
): Promise<ClientJson & { client_secret?: string }> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  const values = rowValues(input, input.client_type, input.allow_insecure_redirects ?? false);
  checkClientKeys(app, input);
  // The grant rule (wazo-auth's grant rule): a client's tokens hold nothing its administrator could not grant.
  requireGrant(caller, values.acl, [], "oidc_clients");
  // 256 random bits (RFC 6749 §10.10: credentials must not be guessable).
  const secret = input.client_type === "confidential" ? randomBytes(32).toString("base64url") : null;
  return inTransaction(app, async (tx) => {
    const [row] = await tx
      .insert(oidcClients)
      .values({
        ...values,
        ...logoutMetadataValues(app, input, values.redirectUris),
        clientId: randomUUID(),
        tenantUuid,
        clientType: input.client_type,
        secretHash: secret ? hashClientSecret(secret) : null,
        idTokenSignedResponseAlg: input.id_token_signed_response_alg ?? app.config.oidc.default_signing_alg,
      })
      .returning();
    await clientEvent(app, tx, "created", row!);
    await recordAudit(app, tx, caller, resourceAudit("oidc_client.create", clientTarget(row!), null, clientJson(row!)));
    return secret ? { ...clientJson(row!), client_secret: secret } : clientJson(row!);
  });
}

/** A client by the `client_id` a browser or client presents (anything not a uuid matches nothing). */
export async function findClient(app: AppContext, clientId: string): Promise<ClientRow | null> {
  if (!isUuid(clientId)) return null;
  const [row] = await app.db.select().from(oidcClients).where(eq(oidcClients.clientId, clientId.toLowerCase()));
  return row ?? null;
}

/** The client when it belongs to the caller's scoping tenant or below; else 404. */
export async function requireVisibleClient(
  app: AppContext,
  caller: Caller,
  clientId: string,
  db: DbOrTx = app.db,
): Promise<ClientRow> {
  const [row] = await db.select().from(oidcClients).where(eq(oidcClients.clientId, clientId));
  if (!row || !(await tenantVisible(app, caller, row.tenantUuid, db))) throw new NotFound("oidc_clients", clientId);
  return row;
}

export async function updateClient(
  app: AppContext,
  caller: Caller,
  clientId: string,
  input: ClientUpdate,
): Promise<void> {
  return inTransaction(app, async (tx) => {
    const current = await requireVisibleClient(app, caller, clientId, tx);
    const values = rowValues(
      input,
      current.clientType as ClientType,
      input.allow_insecure_redirects ?? current.allowInsecureRedirects,
    );
    if (input.acl === undefined) values.acl = current.acl; // absent: kept (PUT of a client older than `acl`)
    if (input.require_pushed_authorization_requests === undefined)
      values.requirePushedAuthorizationRequests = current.requirePushedAuthorizationRequests;
    if (input.dpop_bound_access_tokens === undefined) values.dpopBoundAccessTokens = current.dpopBoundAccessTokens;
    if (input.jwks === undefined && input.jwks_uri === undefined) {
      values.jwks = current.jwks;
      values.jwksUri = current.jwksUri;
    }
    checkClientKeys(app, { jwks: values.jwks, jwks_uri: values.jwksUri });
    requireGrant(
      caller,
      values.acl.filter((e) => !current.acl.includes(e)),
      current.acl.filter((e) => !values.acl.includes(e)),
      "oidc_clients",
    );
    const [row] = await tx
      .update(oidcClients)
      .set({
        ...values,
        ...logoutMetadataValues(app, input, values.redirectUris, current),
        idTokenSignedResponseAlg: input.id_token_signed_response_alg ?? current.idTokenSignedResponseAlg,
      })
      .where(eq(oidcClients.clientId, clientId))
      .returning();
    forgetAfterCommit(app, tx, clientId);
    await clientEvent(app, tx, "updated", row!);
    await recordAudit(
      app,
      tx,
      caller,
      resourceAudit("oidc_client.update", clientTarget(row!), clientJson(current), clientJson(row!)),
    );
  });
}

/** Absent or invisible: nothing to delete, the desired state (D4 of docs/wazo-auth-differences.md). */
export async function deleteClient(app: AppContext, caller: Caller, clientId: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const row = await orAbsent(requireVisibleClient(app, caller, clientId, tx));
    if (!row) return;
    await removeClient(app, tx, row, caller, "oidc_client.delete");
  });
}

/** Deletes a client in `tx` (an administrator's deletion, or the client's own, RFC 7592 §2.3). */
export async function removeClient(
  app: AppContext,
  tx: DbOrTx,
  row: ClientRow,
  actor: Caller | AuditActor,
  action: string,
): Promise<void> {
  const clientId = row.clientId;
  // What the client was given goes with it (RFC 7009 §2.1's spirit: no grant outlives its client):
  // the sessions of its access tokens, its refresh token families and the sessions issued from them.
  await revokeSessions(
    app,
    tx,
    sql`${sessions.uuid} in (select ${oidcAccessTokens.sessionUuid} from ${oidcAccessTokens} where ${oidcAccessTokens.clientId} = ${clientId})`,
  );
  const families = await tx
    .select({ rt: refreshTokens, tenantUuid: users.tenantUuid })
    .from(refreshTokens)
    .innerJoin(users, eq(users.uuid, refreshTokens.userUuid))
    .where(eq(refreshTokens.clientId, clientId));
  for (const f of families) await purgeRefreshToken(app, tx, f.rt, f.tenantUuid);
  await tx.delete(oidcClients).where(eq(oidcClients.clientId, clientId));
  forgetAfterCommit(app, tx, clientId);
  await clientEvent(app, tx, "deleted", row);
  await recordAudit(app, tx, actor, resourceAudit(action, clientTarget(row), clientJson(row), null));
}

export type ClientFilter = "client_id" | "name" | "client_type";
const SORT = { name: oidcClients.name, created_at: oidcClients.createdAt, client_id: oidcClients.clientId } as const;

export async function listClients(
  app: AppContext,
  caller: Caller,
  params: ListParams<ClientFilter>,
): Promise<Collection<ClientJson>> {
  const base = inCallerScope(app, caller, params.recurse, oidcClients.tenantUuid);
  const conditions: SQL[] = [];
  const pattern = searchPattern(params.search);
  if (pattern) conditions.push(ilike(oidcClients.name, pattern));
  const f = params.filters;
  if (f.client_id !== undefined) conditions.push(eq(oidcClients.clientId, f.client_id));
  if (f.name !== undefined) conditions.push(eq(oidcClients.name, f.name));
  if (f.client_type !== undefined) conditions.push(eq(oidcClients.clientType, f.client_type));
  const where = conditions.length ? and(base, ...conditions) : base;
  const column = SORT[(params.order ?? "name") as keyof typeof SORT] ?? oidcClients.name;
  const page = await listPage(
    app.db,
    oidcClients,
    base,
    where,
    [params.direction === "desc" ? desc(column) : asc(column), asc(oidcClients.clientId)],
    params,
  );
  return collection(page.rows.map(clientJson), page.filtered, page.total);
}
