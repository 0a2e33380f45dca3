// Access tokens: lookup (cached), JSON representation (wazo-auth's token representation), scope and tenant
// checks (§5.4), issuance of the token + session pair, and revocation.
import { inArray, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { Db, DbOrTx } from "../../db/index.ts";
import { afterCommit } from "../../db/tx.ts";
import { sessions, tokens } from "../../db/schema.ts";
import type { TokenRow } from "../../db/tables/tokens.ts";
import { isoTime } from "../../domain/time.ts";
import { Forbidden, NotFound } from "../../domain/errors.ts";
import { userTenantUuid } from "../identity/tenant-tree.ts";
import { recordTokenCacheLookup, recordTokenCheck } from "../../observe/metrics.ts";
import type { CachedToken, TokenRecord } from "./token-cache.ts";
import { outboxRowInsert, type BusEvent } from "../events.ts";
import { MAX_SETS, type RowInsert, runInserts, runInsertsCoalesced } from "../../db/bound-inserts.ts";

export const INTERNAL_AUTH_ID = "wazo-auth";

/**
 * True for a token this service mailed for one purpose (password reset, email confirmation): issued
 * to the internal identity with exactly that one access. Such a token acts regardless of tenant.
 */
export function isEmailedToken(caller: { token: { authId: string; acl: string[] } }, access: string): boolean {
  return caller.token.authId === INTERNAL_AUTH_ID && caller.token.acl.length === 1 && caller.token.acl[0] === access;
}

const nowSeconds = () => Date.now() / 1000;

function recordOf(row: TokenRow): TokenRecord {
  let metadata: Record<string, unknown> = {};
  if (row.metadata) {
    try {
      metadata = JSON.parse(row.metadata) ?? {};
    } catch {
      metadata = {};
    }
  }
  return {
    uuid: row.uuid,
    authId: row.authId,
    pbxUserUuid: row.pbxUserUuid,
    xivoUuid: row.xivoUuid,
    issuedT: row.issuedT,
    expireT: row.expireT,
    acl: row.acl,
    metadata,
    userAgent: row.userAgent,
    remoteAddr: row.remoteAddr,
    sessionUuid: row.sessionUuid,
    refreshTokenUuid: row.refreshTokenUuid,
    dpopJkt: row.dpopJkt ?? null,
  };
}

/**
 * Reads the tokens with these ids (those missing from the cache, gathered by the lookup gate). The
 * query is built and prepared once: a flood of unknown tokens runs it every turn of the event loop.
 */
export function tokenReader(db: Db): (uuids: string[]) => Promise<TokenRow[]> {
  const query = db
    .select()
    .from(tokens)
    .where(sql`${tokens.uuid} = any(${sql.placeholder("uuids")}::varchar[])`)
    .prepare("tessera_tokens_by_uuid");
  return (uuids) => query.execute({ uuids });
}

/** A token that exists and has not expired, or null. The hot path: a cache hit does no I/O. */
export async function findValidToken(app: AppContext, uuid: string): Promise<CachedToken | null> {
  const now = nowSeconds();
  const cached = app.tokenCache.get(uuid);
  recordTokenCacheLookup(cached !== undefined);
  if (cached) {
    if (now > cached.expireT) {
      app.tokenCache.evict(uuid);
      return null;
    }
    return cached;
  }
  if (knownAbsent(app, uuid)) return null;
  const mark = app.tokenCache.mark();
  const row = await app.tokenLookups.lookup(uuid);
  if (!row || now > row.expireT) {
    app.tokenCache.addUnknown(uuid, mark);
    return null;
  }
  return app.tokenCache.add(recordOf(row), mark);
}

/** True when memory alone tells that no such token exists (so a check answers 404 without a query). */
export function knownAbsent(app: AppContext, uuid: string): boolean {
  return (
    !isTokenShaped(uuid) || app.tokenCache.knownUnknown(uuid) || (app.tokenIds !== null && !app.tokenIds.mayExist(uuid))
  );
}

const TOKEN_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const isTokenShaped = (s: string) => TOKEN_RE.test(s);

/**
 * A token id as stored: lower case. Tokens are UUIDs, which wazo-auth compares as PostgreSQL `uuid`
 * values, so `9F…` and `9f…` are the same token (RFC 9562 §4: hex digits are case-insensitive on
 * input); the routes' `uuidParam` lower-cases them too. The hot path's common case pays a scan and
 * no allocation: `s` itself is returned unless an upper-case hex digit is present.
 */
export function canonicalTokenId(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 70) return s.toLowerCase(); // A–F
  }
  return s;
}

export interface TokenJson {
  token: string;
  auth_id: string;
  xivo_user_uuid: string | null;
  xivo_uuid: string | null;
  issued_at: string;
  expires_at: string;
  utc_issued_at: string;
  utc_expires_at: string;
  acl: string[];
  metadata: Record<string, unknown>;
  session_uuid: string;
  remote_addr: string;
  user_agent: string;
  refresh_token?: string;
}

/** §5.2. `exactTimes` carries the float issue/expiry times of a token just created. */
export function tokenJson(
  tok: TokenRecord,
  exactTimes?: { issuedAt: number; expiresAt: number },
  refreshToken?: string,
): TokenJson {
  const issued = exactTimes?.issuedAt ?? tok.issuedT;
  const expires = exactTimes?.expiresAt ?? tok.expireT;
  const json: TokenJson = {
    token: tok.uuid,
    auth_id: tok.authId,
    xivo_user_uuid: tok.pbxUserUuid,
    xivo_uuid: tok.xivoUuid,
    issued_at: isoTime(issued, false, false),
    expires_at: isoTime(expires, false, false),
    utc_issued_at: isoTime(issued, true, true),
    utc_expires_at: isoTime(expires, true, true),
    acl: tok.acl,
    metadata: tok.metadata,
    session_uuid: tok.sessionUuid,
    remote_addr: tok.remoteAddr,
    user_agent: tok.userAgent,
  };
  if (refreshToken) json.refresh_token = refreshToken;
  return json;
}

/**
 * §5.4: a valid token, holding `scope` when given, whose user lives in `tenant` or one of its
 * ancestors when `tenant` is given. Throws 404 (no such token) or 403.
 */
export async function checkToken(
  app: AppContext,
  uuid: string,
  scope: string | undefined,
  tenant: string | undefined,
): Promise<CachedToken> {
  return checkFoundToken(app, await findValidToken(app, uuid), scope, tenant);
}

/**
 * `checkToken` of a token already looked up (null: none). `tenantOf` is the token whose user the
 * tenant check reads (a JWT access token's view checks its anchor's: services/oidc/access-jwt.ts).
 */
export async function checkFoundToken(
  app: AppContext,
  tok: CachedToken | null,
  scope: string | undefined,
  tenant: string | undefined,
  tenantOf: CachedToken | null = tok,
): Promise<CachedToken> {
  if (!tok) {
    recordTokenCheck("invalid");
    throw new NotFound("tokens", undefined, "No such token");
  }
  if (scope !== undefined && !tok.matcher.matches(scope)) {
    recordTokenCheck("forbidden");
    throw new Forbidden("tokens", `Unauthorized for ${scope}`, { required_access: scope }, "forbidden-access");
  }
  if (tenant !== undefined) {
    try {
      await checkTokenTenant(app, tenantOf ?? tok, tenant);
    } catch (e) {
      if (e instanceof Forbidden || e instanceof NotFound)
        recordTokenCheck(e instanceof Forbidden ? "forbidden" : "invalid");
      throw e;
    }
  }
  recordTokenCheck("valid");
  return tok;
}

/** The token's user must currently belong to `tenant` or one of its descendants (§5.4). */
export async function checkTokenTenant(app: AppContext, tok: CachedToken, tenant: string): Promise<void> {
  if (tok.authId === INTERNAL_AUTH_ID) return;
  const userUuid = typeof tok.metadata.uuid === "string" ? tok.metadata.uuid : null;
  // A user never changes tenant (and deleting it revokes its tokens), so its tenant is read once per token.
  tok.userTenantUuid ??= userUuid
    ? await userTenantUuid(app.db, userUuid)
    : ((tok.metadata.tenant_uuid as string | undefined) ?? null);
  const currentTenant = tok.userTenantUuid;
  if (userUuid && !currentTenant) throw new NotFound("users", userUuid);
  if (!currentTenant || !(await app.tenantTree.isSubtenant(app.db, tenant, currentTenant))) {
    throw new Forbidden("tokens", `Unauthorized for tenant ${tenant}`, { tenant_uuid: tenant }, "forbidden-tenant");
  }
}

export interface NewToken {
  authId: string;
  pbxUserUuid: string | null;
  acl: string[];
  metadata: Record<string, unknown>;
  expiration: number;
  userAgent: string;
  remoteAddr: string;
  sessionTenantUuid: string;
  mobile: boolean;
  refreshTokenUuid?: string | null;
  /** A chosen token id (imports, tests); by default the database draws a random UUID. */
  uuid?: string;
  /** An existing session the token joins (a continued sign-in: an OIDC refresh); none: a new session. */
  sessionUuid?: string;
}

export interface IssuedToken {
  record: TokenRecord;
  issuedAt: number;
  expiresAt: number;
}

/**
 * Inserts a session and its token (1 token ↔ 1 session, §5.1; or a token of a session it continues)
 * — and `sessionEvent`, the outbox row announcing the session, when given — in one statement: one
 * round trip to the database (PostgreSQL or PGlite's thread). Both ids are drawn here
 * (random v4 UUIDs, as the database's `gen_random_uuid()` would), so nothing is read back.
 */
export async function insertToken(
  app: AppContext,
  tx: DbOrTx,
  t: NewToken,
  sessionEvent?: (sessionUuid: string) => BusEvent,
  /** More rows of the same statement (the login's audit entry), given the new session's uuid. */
  alsoInsert?: (sessionUuid: string) => Array<RowInsert | null>,
): Promise<IssuedToken> {
  const issuedAt = nowSeconds();
  const expiresAt = issuedAt + t.expiration;
  const sessionUuid = t.sessionUuid ?? crypto.randomUUID();
  const row: TokenRow = {
    uuid: t.uuid ?? crypto.randomUUID(),
    authId: t.authId,
    pbxUserUuid: t.pbxUserUuid,
    xivoUuid: app.xivoUuid,
    issuedT: Math.trunc(issuedAt),
    expireT: Math.trunc(expiresAt),
    metadata: JSON.stringify(t.metadata),
    userAgent: t.userAgent,
    remoteAddr: t.remoteAddr,
    acl: t.acl,
    sessionUuid,
    refreshTokenUuid: t.refreshTokenUuid ?? null,
    expireSoonNotified: false,
    dpopJkt: null,
  };
  const inserts: RowInsert[] = t.sessionUuid
    ? []
    : [{ table: sessions, row: { uuid: sessionUuid, tenantUuid: t.sessionTenantUuid, mobile: t.mobile } }];
  if (sessionEvent) inserts.push(outboxRowInsert(app, sessionEvent(sessionUuid)));
  for (const insert of alsoInsert?.(sessionUuid) ?? []) if (insert) inserts.push(insert);
  // The token last, outside the CTEs: its foreign key to its session is checked at the end of the
  // statement, once both exist. The statement's text is built once per shape (db/bound-inserts.ts).
  inserts.push({ table: tokens, row });
  app.tokenIds?.add(row.uuid); // before the commit reveals the id to anyone
  // A write of its own (not in a caller's transaction) may share its statement and commit with
  // concurrent ones of the same shape (db/bound-inserts.ts): the client credentials grants.
  await (tx === app.db ? runInsertsCoalesced(tx, inserts, MAX_SETS[app.database.kind]) : runInserts(tx, inserts));
  afterCommit(tx, () => app.tokenCache.created(row.uuid));
  return { record: recordOf(row), issuedAt, expiresAt };
}

/** Deletes tokens by uuid; returns the deleted rows. Evict from the cache once committed. */
export async function deleteTokens(tx: DbOrTx, uuids: string[]): Promise<TokenRecord[]> {
  if (uuids.length === 0) return [];
  const rows = await tx.delete(tokens).where(inArray(tokens.uuid, uuids)).returning();
  return rows.map(recordOf);
}

export { recordOf as tokenRecordOf };
