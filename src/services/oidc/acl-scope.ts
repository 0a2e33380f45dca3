// ACL scopes (docs/openid-connect.md "Scopes and ACLs"): a scope `acl:<pattern>` asks for a token
// limited to that ACL pattern (RFC 6749 §3.3 lets the server define its scopes). A token asked with
// ACL scopes carries the intersection of its holder's ACL with the requested patterns; without any,
// the holder's whole ACL, as POST /0.1/token gives it. The result is never wider than the holder's
// ACL (every kept allow entry is covered by it, every deny entry stays) nor than the patterns asked.
import { uncoveredWitness } from "../../domain/acl-grant.ts";
import type { AclIdentity } from "../../domain/acl.ts";

export const ACL_SCOPE_PREFIX = "acl:";

/** The ACL patterns a scope list asks for; null when it asks for none (no narrowing). */
export function aclScopes(scope: readonly string[]): string[] | null {
  const patterns = scope.filter((s) => s.startsWith(ACL_SCOPE_PREFIX)).map((s) => s.slice(ACL_SCOPE_PREFIX.length));
  return patterns.length ? patterns.filter((p) => p.length > 0 && !p.startsWith("!")) : null;
}

/**
 * The intersection of `acl` with `requested` patterns. For each requested pattern: kept whole when
 * the holder's allow entries cover it; else the holder's allow entries it covers are kept. A partial
 * overlap (neither covers the other) is dropped — narrower than the exact intersection, never wider.
 * Deny entries (`!x`) are all kept: they only ever take away.
 */
export function narrowAcl(acl: readonly string[], requested: readonly string[] | null, id: AclIdentity): string[] {
  if (requested === null) return [...acl];
  const allows = acl.filter((e) => !e.startsWith("!"));
  const denies = acl.filter((e) => e.startsWith("!"));
  const kept = new Set<string>();
  for (const pattern of requested) {
    if (uncoveredWitness(allows, pattern, id, id) === null) {
      kept.add(pattern);
      continue;
    }
    for (const allow of allows) if (uncoveredWitness([pattern], allow, id, id) === null) kept.add(allow);
  }
  return [...kept, ...denies];
}

/**
 * The scopes of `asked` a client registered with `allowed` may not ask for (RFC 6749 §3.3: the
 * server decides; `invalid_scope`, §5.2). A scope is allowed when registered exactly, or — an ACL
 * scope — when the registered ACL scopes' patterns together cover its pattern (pattern inclusion,
 * decided exactly with the grant rule's automata over src/domain/acl.ts's pattern language): a client
 * registered with `acl:confd.#` may ask for `acl:confd.users.read`, never `acl:calld.#` nor
 * `acl:confd` itself. The same rule bounds a refresh's narrower scope by the grant's (RFC 6749 §6).
 */
export function scopesBeyond(allowed: readonly string[], asked: readonly string[]): string[] {
  const registered = aclScopes(allowed) ?? [];
  return asked.filter((scope) => {
    if (allowed.includes(scope)) return false;
    const pattern = aclScopes([scope])?.[0];
    return pattern === undefined || registered.length === 0 || uncoveredWitness(registered, pattern) !== null;
  });
}

/** The token-issuing hook of a login for these scopes (see LoginRequest.narrowAcl). */
export function aclNarrowing(scope: readonly string[]): ((acl: string[], id: AclIdentity) => string[]) | undefined {
  const requested = aclScopes(scope);
  return requested === null ? undefined : (acl, id) => narrowAcl(acl, requested, id);
}
