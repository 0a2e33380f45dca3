// The OpenID Connect rows of the benchmark (`npm run bench -- oidc`): introspection of a cached OIDC
// access token (wrk, 64 connections) against the bare Bun.serve ceiling, and the authorization code
// flow — the whole sign-in through the hosted page then the exchange, and the exchange alone (codes
// made beforehand) — against POST /0.1/token's login with the same password hash. The code exchange
// signs the ID token with the key kept in memory: no database read or key import per token.
import { createHash, randomBytes } from "node:crypto";
import { login, type Tessera, type WrkResult } from "./lib.ts";

export const REDIRECT = "https://rp.example.com/cb";

export interface OidcClient {
  client_id: string;
  client_secret: string;
}

export async function registerClient(t: Tessera): Promise<OidcClient> {
  const admin = await login(t.base, "admin", "admin-password");
  const r = await fetch(`${t.base}/oidc/clients`, {
    method: "POST",
    headers: { "X-Auth-Token": admin, "Content-Type": "application/json" },
    // First-party: the flow measured is the sign-in and the exchange, no consent screen between.
    body: JSON.stringify({ name: "bench", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true }),
  });
  if (r.status !== 201) throw new Error(`client registration: ${r.status} ${await r.text()}`);
  return (await r.json()) as OidcClient;
}

const b64url = (b: Buffer) => b.toString("base64url");

/** Signs in through the hosted page as a browser would; the code and its PKCE verifier. */
export async function signIn(t: Tessera, c: OidcClient, user: string, password: string) {
  const verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash("sha256").update(verifier).digest());
  const q = new URLSearchParams({
    response_type: "code",
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    scope: "openid profile",
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  const page = await fetch(`${t.base}/oidc/authorize?${q}`);
  const html = await page.text();
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    form.set(m[1]!, m[2]!.replaceAll("&amp;", "&"));
  form.set("username", user);
  form.set("password", password);
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0]!;
  const back = await fetch(`${t.base}/oidc/authorize`, {
    method: "POST",
    body: form,
    redirect: "manual",
    headers: { Cookie: cookie },
  });
  const code = new URL(back.headers.get("location") ?? "http://x/").searchParams.get("code");
  if (!code) throw new Error(`sign-in failed: ${back.status}`);
  return { code, verifier };
}

export async function exchange(t: Tessera, c: OidcClient, code: string, verifier: string): Promise<string> {
  const r = await fetch(`${t.base}/oidc/token`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${c.client_id}:${c.client_secret}`)}` },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
    }),
  });
  if (r.status !== 200) throw new Error(`exchange failed: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { access_token: string }).access_token;
}

/** `n` operations with `concurrency` in flight: rate and latency percentiles, as wrk reports them. */
export async function timed(n: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<WrkResult> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const t0 = performance.now();
        await op(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!;
  return { rps: n / elapsed, p50: pct(0.5), p99: pct(0.99) };
}
