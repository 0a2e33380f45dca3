// In-process cache of valid tokens for the token-check hot path. Tokens never change once issued,
// only disappear, so an entry stays good until it expires or is revoked. Revocations reach every
// instance through the `tessera_token_deleted` NOTIFY (a trigger on auth_token, fired on commit);
// an id revoked while its row was being read is remembered briefly so it is never cached stale.
import { compileAcl, type AclMatcher } from "../acl.ts";

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
}

export interface CachedToken extends TokenRecord {
  /** The ACL compiled once for this token (`me`/`my_session` bound to its ids). */
  matcher: AclMatcher;
  /** Tenant of the token's user, read on the first `tenant=` check (undefined until then). */
  userTenantUuid?: string | null;
}

const REVOKED_MEMORY_MS = 60_000;

export class TokenCache {
  private readonly entries = new Map<string, CachedToken>();
  private readonly revoked = new Map<string, number>();

  constructor(private readonly capacity = 100_000) {}

  get(uuid: string): CachedToken | undefined {
    return this.entries.get(uuid);
  }

  /** Caches a token read from the database, unless it was revoked since `readStartedAt`. */
  add(record: TokenRecord, readStartedAt: number): CachedToken {
    const cached: CachedToken = {
      ...record,
      matcher: compileAcl(record.acl, { authId: record.authId, sessionUuid: record.sessionUuid }),
    };
    const revokedAt = this.revoked.get(record.uuid);
    if (revokedAt !== undefined && revokedAt >= readStartedAt) return cached;
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

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
