// Which network addresses a tenant-chosen URL may reach. Webhooks, logout URIs and upstream identity providers
// are URLs that a tenant administrator or a self-registered client picks; without this check any of them could
// make Tessera call its own loopback services, the private network behind it or a cloud metadata endpoint
// (server-side request forgery, OWASP's SSRF prevention cheat sheet).
import { isIP } from "node:net";

/** An address range: the address bytes and the prefix length. */
export interface Cidr {
  bytes: Uint8Array;
  prefix: number;
}

/** Ranges never reachable from a tenant-chosen URL unless `outbound_http.allow_private_targets` admits them. */
const BLOCKED = [
  "0.0.0.0/8", // "this network" (RFC 791); 0.0.0.0 reaches the local host on Linux
  "10.0.0.0/8", // private (RFC 1918)
  "100.64.0.0/10", // carrier-grade NAT (RFC 6598)
  "127.0.0.0/8", // loopback (RFC 1122 §3.2.1.3)
  "169.254.0.0/16", // link-local (RFC 3927), holds the cloud metadata address 169.254.169.254
  "172.16.0.0/12", // private (RFC 1918)
  "192.0.0.0/24", // IETF protocol assignments (RFC 6890)
  "192.168.0.0/16", // private (RFC 1918)
  "198.18.0.0/15", // benchmarking (RFC 2544)
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, and the broadcast address
  "::/128", // unspecified
  "::1/128", // loopback (RFC 4291 §2.5.3)
  "64:ff9b:1::/48", // local-use IPv4/IPv6 translation (RFC 8215)
  "fc00::/7", // unique local (RFC 4193), holds AWS's fd00:ec2::254 metadata address
  "fe80::/10", // link-local (RFC 4291 §2.5.6)
  "ff00::/8", // multicast
].map(parseCidr);

/** Parses "a.b.c.d/n", "x::y/n" or a bare address (a /32 or /128). Throws on anything else. */
export function parseCidr(text: string): Cidr {
  const [address, prefixText, ...rest] = text.trim().split("/");
  const bytes = address === undefined ? null : addressBytes(address);
  if (!bytes || rest.length > 0) throw new Error(`not an address range: ${text}`);
  const max = bytes.length * 8;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || !/^\d*$/.test(prefixText ?? "")) {
    throw new Error(`not an address range: ${text}`);
  }
  return { bytes, prefix };
}

/** The address's bytes (4 for IPv4, 16 for IPv6), or null when it is not an IP address. */
export function addressBytes(address: string): Uint8Array | null {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const version = isIP(bare);
  if (version === 4) return Uint8Array.from(bare.split(".").map(Number));
  if (version !== 6) return null;
  return ipv6Bytes(bare.replace(/%.*$/, ""));
}

function ipv6Bytes(text: string): Uint8Array {
  // A trailing dotted IPv4 part (::ffff:1.2.3.4) becomes two groups.
  const dotted = text.match(/(\d+\.\d+\.\d+\.\d+)$/);
  let head = text;
  if (dotted?.[1]) {
    const [a, b, c, d] = dotted[1].split(".").map(Number) as [number, number, number, number];
    head = `${text.slice(0, -dotted[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left, right] = head.split("::") as [string, string | undefined];
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => Number.parseInt(g, 16)));
  const l = groups(left);
  const r = right === undefined ? [] : groups(right);
  const all = right === undefined ? l : [...l, ...Array(8 - l.length - r.length).fill(0), ...r];
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

export function inCidr(bytes: Uint8Array, range: Cidr): boolean {
  if (bytes.length !== range.bytes.length) return false;
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[i] ?? 0) & mask) !== ((range.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

/** An IPv4 address carried in IPv6 (::ffff:a.b.c.d mapped, or the NAT64 well-known prefix 64:ff9b::/96). */
function embeddedIpv4(bytes: Uint8Array): Uint8Array | null {
  if (bytes.length !== 16) return null;
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  const nat64 = inCidr(bytes, NAT64);
  return mapped || nat64 ? bytes.slice(12) : null;
}
const NAT64 = parseCidr("64:ff9b::/96");

/**
 * True when `address` may be called: a public address, or one inside a range the operator allowed.
 * An address that is not an IP literal is refused (callers resolve names first).
 */
export function isAllowedAddress(address: string, allowed: readonly Cidr[]): boolean {
  const bytes = addressBytes(address);
  if (!bytes) return false;
  if (allowed.some((range) => inCidr(bytes, range))) return true;
  const inner = embeddedIpv4(bytes);
  if (inner && allowed.some((range) => inCidr(inner, range))) return true;
  const blocked = (b: Uint8Array) => BLOCKED.some((range) => inCidr(b, range));
  return !blocked(bytes) && !(inner && blocked(inner));
}
