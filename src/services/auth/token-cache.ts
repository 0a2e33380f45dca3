// In-process cache of valid tokens for the token-check hot path. Tokens never change once issued,
// only disappear, so an entry stays good until it expires or is revoked. Revocations reach every
// instance through the `tessera_token_deleted` NOTIFY (a trigger on auth_token, fired on commit);
// an id revoked while its row was being read is remembered briefly so it is never cached stale.
// While this instance may be missing notifications (its LISTEN connection is lost), the cache is
// suspended: nothing is served from it nor added to it, and it is emptied again when hearing
// resumes, so a token revoked meanwhile is never granted from memory. Unknown ids are remembered
// for a short while (bounded) so that repeated checks of a revoked or made-up token cost no query.
import { compileAcl, type AclMatcher } from "../../domain/acl.ts";

export interface TokenRecord {
  uuid: string;
  authId: string;
  pbxUserUuid: string | null;
  xivoUuid: string | null;
  issuedT: number;
  expireT: number;
  acl: string[];
  metadata: Record<string, unknown>;
  userAgent: string;
  remoteAddr: string;
  sessionUuid: string;
  refreshTokenUuid: string | null;
  /** RFC 9449 §6: the DPoP key's thumbprint the token is bound to (services/oidc/dpop.ts); null: bearer. */
  dpopJkt: string | null;
}

export interface CachedToken extends TokenRecord {
  /** The ACL compiled once for this token (`me`/`my_session` bound to its ids). */
  matcher: AclMatcher;
  /** Tenant of the token's user, read on the first `tenant=` check (undefined until then). */
  userTenantUuid?: string | null;
  /** What the OpenID Connect provider issued it for (null: not an OIDC token), read on first need. */
  oidcGrant?: {
    userUuid: string | null;
    scope: string[];
    clientId: string;
    grantType: string;
    /** RFC 9449 §6: the thumbprint of the DPoP key the token is bound to; null: a bearer token. */
    jkt: string | null;
  } | null;
  /** The last introspection answer (RFC 7662) given about it: to which client (and its reach), with which issuer. */
  introspected?: { clientId: string; firstParty: boolean; issuer: string; json: string };
}

const REVOKED_MEMORY_MS = 60_000;
const UNKNOWN_MEMORY_MS = 30_000;
const UNKNOWN_CAPACITY = 50_000;

/** Taken before a database read: a read older than the last drop of the cache is not kept. */
export interface ReadMark {
  at: number;
  epoch: number;
}

export class TokenCache {
  private readonly entries = new Map<string, CachedToken>();
  private readonly revoked = new Map<string, number>();
  /** Ids the database did not know, with when it said so. */
  private readonly unknown = new Map<string, number>();
  private trusted = true;
  private epoch = 0;

  constructor(private readonly capacity = 100_000) {}

  /** False while notifications may be missed: callers must read through to the database. */
  get isTrusted(): boolean {
    return this.trusted;
  }

  get(uuid: string): CachedToken | undefined {
    return this.trusted ? this.entries.get(uuid) : undefined;
  }

  mark(): ReadMark {
    return { at: Date.now(), epoch: this.epoch };
  }

  /** Caches a token read from the database, unless it was revoked (or the cache dropped) since `mark`. */
  add(record: TokenRecord, mark: ReadMark): CachedToken {
    const cached: CachedToken = {
      ...record,
      matcher: compileAcl(record.acl, { authId: record.authId, sessionUuid: record.sessionUuid }),
    };
    if (!this.trusted || mark.epoch !== this.epoch) return cached;
    const revokedAt = this.revoked.get(record.uuid);
    if (revokedAt !== undefined && revokedAt >= mark.at) return cached;
    if (this.entries.size >= this.capacity) {
      // Oldest first: Map keeps insertion order.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(record.uuid, cached);
    return cached;
  }

  evict(uuid: string): void {
    this.entries.delete(uuid);
    const now = Date.now();
    this.revoked.set(uuid, now);
    if (this.revoked.size > 10_000) {
      for (const [id, at] of this.revoked) {
        if (now - at <= REVOKED_MEMORY_MS) break;
        this.revoked.delete(id);
      }
    }
  }

  /** Drops every cached token of the given sessions (after their deletion committed). */
  evictSessions(sessionUuids: Iterable<string>): void {
    const set = new Set(sessionUuids);
    if (set.size === 0) return;
    for (const [id, tok] of this.entries) if (set.has(tok.sessionUuid)) this.evict(id);
  }

  /**
   * True when the database recently said it has no such token (and nothing was created since), or
   * when it was evicted as deleted or expired (for good: ids are never reused). The latter saves the
   * first check after a revocation NOTIFY a database round trip: the refusal propagates with the
   * notice alone, without waiting on a lookup under load.
   */
  knownUnknown(uuid: string): boolean {
    if (this.revoked.has(uuid)) return true;
    const at = this.unknown.get(uuid);
    if (at === undefined) return false;
    if (Date.now() - at <= UNKNOWN_MEMORY_MS) return true;
    this.unknown.delete(uuid);
    return false;
  }

  /** Remembers an id the database does not know (read after `mark`). */
  addUnknown(uuid: string, mark: ReadMark): void {
    if (mark.epoch !== this.epoch) return;
    if (this.unknown.size >= UNKNOWN_CAPACITY) {
      const oldest = this.unknown.keys().next().value;
      if (oldest !== undefined) this.unknown.delete(oldest);
    }
    this.unknown.set(uuid, Date.now());
  }

  /**
   * A token was created with this id. Ids are random UUIDs, only revealed
   * after the commit, so no client can ask for one before it exists; this is the belt to those braces.
   */
  created(uuid: string): void {
    this.unknown.delete(uuid);
    this.revoked.delete(uuid);
  }

  /** Notifications may be missed from now on: stop serving from memory. */
  suspend(): void {
    this.trusted = false;
    this.clear();
  }

  /** Every channel is subscribed again: drop what was learnt before, then trust the cache again. */
  resume(): void {
    this.clear();
    this.trusted = true;
  }

  clear(): void {
    this.entries.clear();
    this.unknown.clear();
    this.epoch++;
  }

  get size(): number {
    return this.entries.size;
  }
}
