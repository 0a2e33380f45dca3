// Calls to URLs a tenant administrator or a self-registered client chose (webhooks, logout URIs, upstream
// identity providers): one policy for all of them, `outbound_http` in the configuration.
import { lookup as dnsLookup } from "node:dns/promises";
import { addressBytes, type Cidr, isAllowedAddress, parseCidr } from "./addresses.ts";

export interface OutboundPolicy {
  /** Ranges admitted although private, loopback or link-local (`outbound_http.allow_private_targets`). */
  allowed: readonly Cidr[];
  /** `http:` URLs admitted (`outbound_http.allow_http`); otherwise https only. */
  allowHttp: boolean;
  /** Whole-call deadline, connection to last byte. */
  timeoutMs: number;
  /** Responses longer than this are cut off and refused. */
  maxResponseBytes: number;
}

export interface OutboundSettings {
  allow_private_targets: string[];
  allow_http: boolean;
  timeout_ms: number;
  max_response_bytes: number;
}

export function outboundPolicy(settings: OutboundSettings): OutboundPolicy {
  return {
    allowed: settings.allow_private_targets.map(parseCidr),
    allowHttp: settings.allow_http,
    timeoutMs: settings.timeout_ms,
    maxResponseBytes: settings.max_response_bytes,
  };
}

/** Why a URL may not be called; `message` is safe to show to the administrator who chose it. */
export class OutboundRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutboundRefused";
  }
}

/**
 * The checks that need no network: scheme, no credentials in the URL, and an address written in the URL (or
 * `localhost`) that the policy refuses. Returns the reason, or null. Run at creation, to answer 400 at once.
 */
export function urlRefusal(text: string, policy: OutboundPolicy): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(policy.allowHttp && url.protocol === "http:")) {
    return policy.allowHttp ? "must be an http or https URL" : "must be an https URL";
  }
  if (url.username || url.password) return "must not carry credentials";
  const host = url.hostname.toLowerCase();
  if (addressBytes(host)) {
    return isAllowedAddress(host, policy.allowed) ? null : "names a private, loopback or link-local address";
  }
  if (host === "localhost" || host.endsWith(".localhost")) {
    // RFC 6761 §6.3: names under localhost resolve to loopback.
    return isAllowedAddress("127.0.0.1", policy.allowed) ? null : "names a private, loopback or link-local address";
  }
  return null;
}

export type Lookup = (host: string) => Promise<string[]>;

const systemLookup: Lookup = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Checks the URL as `urlRefusal` does, then resolves its host and refuses it when any address it resolves to is
 * refused (an attacker's name may resolve to both a public and a private address). Run before every call.
 */
export async function checkTarget(text: string, policy: OutboundPolicy, lookup: Lookup = systemLookup): Promise<URL> {
  const refusal = urlRefusal(text, policy);
  if (refusal) throw new OutboundRefused(`${text} ${refusal}`);
  const url = new URL(text);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (addressBytes(host)) return url;
  let addresses: string[];
  try {
    addresses = await lookup(host);
  } catch {
    throw new OutboundRefused(`${url.host} does not resolve`);
  }
  if (addresses.length === 0) throw new OutboundRefused(`${url.host} does not resolve`);
  if (addresses.some((address) => !isAllowedAddress(address, policy.allowed))) {
    throw new OutboundRefused(`${url.host} resolves to a private, loopback or link-local address`);
  }
  return url;
}

/**
 * `fetch` for a tenant-chosen URL: the target checked after resolution, redirects not followed (a 3xx comes back
 * as it is, so a redirect cannot lead past the check), a deadline for the whole call and a cap on the body read.
 * A host whose DNS answer changes between the check and the connection (DNS rebinding) is the remaining window;
 * it closes for deployments that set no `allow_private_targets` and filter egress at the network as well.
 */
export async function outboundFetch(
  text: string,
  init: RequestInit,
  policy: OutboundPolicy,
  lookup: Lookup = systemLookup,
): Promise<{ status: number; headers: Headers; body: string }> {
  const url = await checkTarget(text, policy, lookup);
  const signal = AbortSignal.timeout(policy.timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: "manual", signal });
  } catch {
    throw new OutboundRefused(signal.aborted ? `${url.host} did not answer in time` : `${url.host} cannot be reached`);
  }
  const body = await readCapped(response, policy.maxResponseBytes, signal);
  return { status: response.status, headers: response.headers, body };
}

async function readCapped(response: Response, maxBytes: number, signal: AbortSignal): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw new OutboundRefused(`the answer is longer than ${maxBytes} bytes`);
      chunks.push(value);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    if (e instanceof OutboundRefused) throw e;
    throw new OutboundRefused(signal.aborted ? "the answer did not arrive in time" : "the answer was cut off");
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
