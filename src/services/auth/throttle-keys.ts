// What login throttling counts: a login name (as typed, normalised: logins are case-insensitive)
// and a client address (an IPv6 client is counted per /64, the block one subscriber usually holds,
// so hopping through its addresses gains nothing). Pure functions, no I/O.
import { createHash } from "node:crypto";

/**
 * Trimmed, NFKC, lower-cased: the comparison logins use (RFC 8265 §3.3, identity/login-names.ts), so
 * look-alikes that log in as one user (`ＡＤＭＩＮ`, `admin`) share one count. A very long login is
 * hashed so every key fits the index, and so is one holding a NUL, which PostgreSQL text cannot
 * store (it would turn a refused login into a 503).
 */
export function normaliseLogin(login: string): string {
  const n = login.trim().normalize("NFKC").toLowerCase();
  return n.length > 256 || n.includes("\0") ? `sha256:${createHash("sha256").update(n).digest("hex")}` : n;
}

/** IPv4 as is (also when IPv4-mapped), IPv6 as its 8 groups, anything else lower-cased. */
export function canonicalAddress(address: string): string {
  const a = address.trim().toLowerCase();
  const groups = ipv6Groups(a);
  if (!groups) return a;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".");
  }
  return groups.map((g) => g.toString(16)).join(":");
}

/** The counter key of a client address: IPv4 as is, IPv6 by its /64 prefix; null when unknown. */
export function addressKey(address: string): string | null {
  const canonical = canonicalAddress(address);
  if (!canonical) return null;
  const groups = ipv6Groups(canonical);
  return groups
    ? `${groups
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(":")}::/64`
    : canonical;
}

function ipv6Groups(address: string): number[] | null {
  let a = address.split("%")[0]!;
  if (!a.includes(":")) return null;
  const lastColon = a.lastIndexOf(":");
  const tail = a.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = tail.split(".").map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : -1));
    if (v4.length !== 4 || v4.some((n) => n < 0 || n > 255)) return null;
    a = `${a.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = a.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const parts = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  if (!parts.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return parts.map((g) => parseInt(g, 16));
}
