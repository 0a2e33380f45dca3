// `npm run bench -- upstream`: what a sign-in through a tenant's upstream OpenID provider costs
// Tessera, beside a password sign-in on the same hosted page (issue 40: "no more than a password
// sign-in"). Both are whole relying-party flows — the login page, the sign-in, the code exchange —
// driven as a browser without JavaScript does; the upstream is panva's oidc-provider under Node in
// a child process (the tests' helper). The figure that answers the question is Tessera's own CPU
// time per sign-in (its process only, from /proc), which neither the upstream's work nor a loaded
// machine's waiting inflates; the wall rate is printed beside it.
import { createHash, randomBytes } from "node:crypto";
import { hiddenFieldsOf, mergeCookies } from "../tests/helpers/oidc.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../tests/helpers/upstream-oidc.ts";
import { cpuSeconds, login, type Tessera, type WrkResult } from "./lib.ts";
import { exchange, type OidcClient, REDIRECT, signIn, timed } from "./oidc.ts";

export interface UpstreamRow {
  target: string;
  result: WrkResult;
  /** Tessera's CPU milliseconds per sign-in. */
  cpuMs: number;
}

// One PKCE pair for every measured flow (RFC 7636 §4.1–4.2): the bench measures sign-ins, not randomness.
const VERIFIER = randomBytes(32).toString("base64url");
const PKCE = {
  code_challenge: createHash("sha256").update(VERIFIER).digest("base64url"),
  code_challenge_method: "S256",
};

/** Follows redirects with one cookie jar (a browser's, for one host) until the relying party's URI. */
async function followToClient(start: string): Promise<string> {
  let cookie = "";
  let at = start;
  for (let hops = 0; hops < 20; hops++) {
    const res = await fetch(at, { redirect: "manual", headers: cookie ? { Cookie: cookie } : {} });
    cookie = mergeCookies(cookie, res);
    const location = res.headers.get("location");
    if (!location)
      throw new Error(`upstream sign-in stopped at ${at}: ${res.status} ${(await res.text()).slice(0, 200)}`);
    await res.arrayBuffer();
    const next = new URL(location, at);
    if (next.href.startsWith(REDIRECT)) {
      const code = next.searchParams.get("code");
      if (!code) throw new Error(`no code: ${next.href}`);
      return code;
    }
    at = next.href;
  }
  throw new Error("too many redirects");
}

/** The login page's "Continue with Bench SSO" link, for a new authorization request. */
async function upstreamButton(t: Tessera, c: OidcClient): Promise<{ href: string; cookie: string }> {
  const q = new URLSearchParams({
    response_type: "code",
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    scope: "openid profile",
    ...PKCE,
  });
  const page = await fetch(`${t.base}/oidc/authorize?${q}`);
  const html = await page.text();
  const href = /<a class="button secondary" href="([^"]+)">Continue with Bench SSO<\/a>/.exec(html)?.[1];
  if (!href)
    throw new Error(`no upstream button on the login page (${page.status}): ${Object.keys(hiddenFieldsOf(html))}`);
  return { href: `${t.base}/oidc/${href.replaceAll("&amp;", "&")}`, cookie: mergeCookies("", page) };
}

async function upstreamSignIn(t: Tessera, c: OidcClient): Promise<void> {
  const button = await upstreamButton(t, c);
  const code = await followToClient(button.href);
  await exchange(t, c, code, VERIFIER);
}

async function addProvider(t: Tessera, up: UpstreamOidc): Promise<void> {
  const admin = await login(t.base, "admin", "admin-password");
  const call = async (method: string, path: string, body: unknown) => {
    const r = await fetch(`${t.base}${path}`, {
      method,
      headers: { "X-Auth-Token": admin, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
    return r.status === 204 ? null : ((await r.json()) as { uuid: string; redirect_uri: string });
  };
  const base = { name: "bench", display_name: "Bench SSO", issuer: up.issuer, provisioning: "create" };
  const made = (await call("POST", "/backends/oidc", { ...base, client_id: "pending", client_secret: "pending" }))!;
  const creds = await up.register([made.redirect_uri]);
  await call("PUT", `/backends/oidc/${made.uuid}`, { ...base, ...creds });
}

/**
 * Password sign-ins and upstream sign-ins of one relying party (`client`, first-party: no consent
 * page), `n` of each with 4 in flight, alternated twice so a drift of the machine's load falls on
 * both. `t` must allow loopback outbound targets over http (the upstream runs on 127.0.0.1).
 */
export async function upstreamSection(t: Tessera, client: OidcClient, n: number): Promise<UpstreamRow[]> {
  const up = await startUpstreamOidc({
    accounts: { bench: { preferred_username: "bench.up", email: "bench.up@corp.example", email_verified: true } },
  });
  try {
    await addProvider(t, up);
    await up.set({ account: "bench", tamper: null });
    // The first sign-in provisions the user; the measured ones find it by its link, as every later one does.
    await upstreamSignIn(t, client);
    const password = async () => {
      const { code, verifier } = await signIn(t, client, "bench", "bench-password");
      await exchange(t, client, code, verifier);
    };
    const upstream = () => upstreamSignIn(t, client);
    const totals = {
      password: { cpu: 0, n: 0, runs: [] as WrkResult[] },
      upstream: { cpu: 0, n: 0, runs: [] as WrkResult[] },
    };
    for (let round = 0; round < 2; round++) {
      for (const [name, op] of [
        ["password", password],
        ["upstream", upstream],
      ] as const) {
        const before = cpuSeconds(t.pid);
        const r = await timed(n, 4, op);
        totals[name].cpu += cpuSeconds(t.pid) - before;
        totals[name].n += n;
        totals[name].runs.push(r);
      }
    }
    const mean = (runs: WrkResult[]): WrkResult => ({
      rps: runs.reduce((s, r) => s + r.rps, 0) / runs.length,
      p50: runs.reduce((s, r) => s + r.p50, 0) / runs.length,
      p99: Math.max(...runs.map((r) => r.p99)),
    });
    return [
      {
        target: "OIDC sign-in with a password on the hosted page + code exchange (4 in flight), argon2id, PGlite",
        result: mean(totals.password.runs),
        cpuMs: (totals.password.cpu * 1000) / totals.password.n,
      },
      {
        target:
          "OIDC sign-in through an upstream OpenID provider (oidc-provider, child process) + code exchange (4 in flight), PGlite",
        result: mean(totals.upstream.runs),
        cpuMs: (totals.upstream.cpu * 1000) / totals.upstream.n,
      },
    ];
  } finally {
    await up.stop();
  }
}
