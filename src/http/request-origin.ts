// The client address of a request: the one function every caller uses (login and password-reset
// throttling, the `remote_addr` of tokens and sessions, the access log, the token check's log line).
// `X-Forwarded-For` is believed only when the socket peer is a configured proxy
// (`rest_api.trusted_proxies`), walking the header from the right past every trusted proxy: the
// first address that is not a trusted proxy is the client (RFC 7239 §7.4 and MDN's "trusted proxy
// list" selection; `X-Forwarded-For` has no RFC of its own). A client talking to Tessera directly
// cannot choose its address, and one behind the proxies cannot either: its own forged entries sit
// left of the entry the first trusted proxy appended for it.
import { BlockList, isIP } from "node:net";
import type { Context } from "hono";

export interface ClientOrigin {
  address: string;
  /** True when the address came from `X-Forwarded-For`: such an address is never exempt from throttling. */
  forwarded: boolean;
}

const compiled = new WeakMap<readonly string[], BlockList>();

/** The trusted proxies as a matcher (compiled once per configured list); null when none is trusted. */
export function proxyMatcher(trusted: readonly string[]): BlockList | null {
  if (trusted.length === 0) return null;
  let list = compiled.get(trusted);
  if (!list) {
    list = new BlockList();
    for (const entry of trusted) addEntry(list, entry);
    compiled.set(trusted, list);
  }
  return list;
}

/** An address or CIDR (`10.0.0.0/8`, `2001:db8::/32`, `127.0.0.1`); throws on anything else. */
function addEntry(list: BlockList, entry: string): void {
  const [address = "", bits, ...rest] = entry.trim().split("/");
  const family = isIP(address);
  const max = family === 4 ? 32 : 128;
  if (!family || rest.length || (bits !== undefined && !/^\d{1,3}$/.test(bits)) || Number(bits ?? max) > max) {
    throw new Error(`not an IP address or CIDR: ${JSON.stringify(entry)}`);
  }
  const type = family === 4 ? "ipv4" : "ipv6";
  if (bits === undefined) list.addAddress(address, type);
  else list.addSubnet(address, Number(bits), type);
}

/** True when `entry` is a valid `trusted_proxies` item (the config schema's check). */
export function isProxyEntry(entry: string): boolean {
  try {
    addEntry(new BlockList(), entry);
    return true;
  } catch {
    return false;
  }
}

const isTrusted = (list: BlockList, address: string) => {
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 4 ? "ipv4" : "ipv6");
};

/**
 * The client's origin from the socket peer and the `X-Forwarded-For` value. With no trusted proxy
 * (the default) this reads nothing and allocates nothing: the peer is the client.
 */
export function clientOrigin(
  peer: string,
  forwarded: string | null | undefined,
  trusted: BlockList | null,
): ClientOrigin {
  if (!trusted || !forwarded || !isTrusted(trusted, peer)) return { address: peer, forwarded: false };
  const hops = forwarded.split(",");
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = stripBrackets(hops[i]!.trim());
    // Only an IP address is an address: a host name, `unknown` or `<script>` ends the walk at the
    // last address a trusted proxy vouched for.
    if (!isIP(hop)) break;
    client = hop;
    if (!isTrusted(trusted, hop)) break;
  }
  // Through a proxy: never exempt, even when the walk ends on the proxy itself.
  return { address: client, forwarded: true };
}

/** `[2001:db8::1]` as some proxies write IPv6 entries. */
const stripBrackets = (s: string) => (s.startsWith("[") && s.endsWith("]") ? s.slice(1, -1) : s);

/** The client address alone (what logs and tokens record). */
export function clientAddress(
  trustedProxies: readonly string[],
  peer: string,
  forwarded: string | null | undefined,
): string {
  const trusted = proxyMatcher(trustedProxies);
  return trusted ? clientOrigin(peer, forwarded, trusted).address : peer;
}

/** The origin of a request handled by the Hono app (`trustedProxies`: `rest_api.trusted_proxies`). */
export function requestOrigin(c: Context, trustedProxies: readonly string[]): ClientOrigin {
  const peer = (c.env as { remoteAddr?: string } | undefined)?.remoteAddr ?? "";
  const trusted = proxyMatcher(trustedProxies);
  return trusted ? clientOrigin(peer, c.req.header("X-Forwarded-For"), trusted) : { address: peer, forwarded: false };
}

/**
 * The path prefix a reverse proxy serves Tessera under (`X-Script-Name`, wazo-auth's header), or
 * undefined. Believed, as `X-Forwarded-For` is, only from a socket peer in
 * `rest_api.trusted_proxies`: from anyone else it would let a caller choose the issuer's path (the
 * `iss` of discovery, ID tokens and introspection) and the OpenAPI document's server. With
 * `public_url` set the header is not read at all. The one reader, for every door.
 */
export function trustedScriptName(
  trustedProxies: readonly string[],
  peer: string,
  scriptName: string | null | undefined,
): string | undefined {
  if (!scriptName) return undefined;
  const trusted = proxyMatcher(trustedProxies);
  return trusted && isTrusted(trusted, peer) ? scriptName : undefined;
}

/** `trustedScriptName` of a request handled by the Hono app. */
export function requestScriptName(c: Context, trustedProxies: readonly string[]): string | undefined {
  const peer = (c.env as { remoteAddr?: string } | undefined)?.remoteAddr ?? "";
  return trustedScriptName(trustedProxies, peer, c.req.header("X-Script-Name"));
}
