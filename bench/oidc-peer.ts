// `npm run bench -- oidc-peer`: Tessera's OAuth endpoints side by side with panva's oidc-provider 9
// (bench/oidc-peer-server.mjs, under Node in a child process, its in-memory adapter, one client for
// the client credentials grant), the same wrk loads on both: introspection of a client-credentials
// access token, discovery, the JWK Set (64 connections) and the client credentials grant
// (16 connections); Tessera on PGlite and on PostgreSQL, and a bare Bun.serve as the ceiling. Every
// target runs at once (idle ones cost nothing) and is measured in interleaved rounds, so a change
// of the machine's load shifts every figure alike; medians reported, with Tessera ÷ peer ratios.
import { join } from "node:path";
import { login, root, type Tessera, waitFor, wrk, type WrkResult } from "./lib.ts";

export interface PeerRow {
  target: string;
  result: WrkResult;
  extra: string;
}

interface Target {
  name: string;
  /** Base URLs of the four endpoints, and the Basic credentials and a token for introspection. */
  introspect: string;
  discovery: string;
  jwks: string;
  token: string;
  basic: string;
  accessToken(): Promise<string>;
}

const PEER_PORT = Number(process.env.BENCH_PEER_PORT ?? 9701);
const PEER_CLIENT = "bench-peer-client";
const PEER_SECRET = "bench-peer-secret-3f9c2a7e5d1b4c6a8e0f";

/** Node's path: oidc-provider runs on Node, as it is deployed. */
const NODE = process.env.BENCH_NODE ?? "node";

async function accessTokenOf(tokenUrl: string, basic: string): Promise<string> {
  const r = await fetch(tokenUrl, {
    method: "POST",
    headers: { Authorization: `Basic ${basic}`, "Content-Type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
  if (r.status !== 200) throw new Error(`client credentials at ${tokenUrl}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { access_token: string }).access_token;
}

/** A confidential client of Tessera for the client credentials grant (and introspection). */
async function tesseraTarget(name: string, t: Tessera): Promise<Target> {
  const admin = await login(t.base, "admin", "admin-password");
  const r = await fetch(`${t.base}/oidc/clients`, {
    method: "POST",
    headers: { "X-Auth-Token": admin, "Content-Type": "application/json" },
    body: JSON.stringify({
      name: "bench-peer",
      client_type: "confidential",
      redirect_uris: [],
      grant_types: ["client_credentials"],
      acl: ["confd.users.read"],
    }),
  });
  if (r.status !== 201) throw new Error(`client registration: ${r.status} ${await r.text()}`);
  const c = (await r.json()) as { client_id: string; client_secret: string };
  const basic = btoa(`${c.client_id}:${c.client_secret}`);
  const token = `${t.base}/oidc/token`;
  return {
    name,
    introspect: `${t.base}/oidc/introspect`,
    discovery: `${t.base}/oidc/.well-known/openid-configuration`,
    jwks: `${t.base}/oidc/jwks`,
    token,
    basic,
    accessToken: () => accessTokenOf(token, basic),
  };
}

async function startPeer(): Promise<{ target: Target; stop(): Promise<void> }> {
  const proc = Bun.spawn(
    [NODE, join(root, "bench/oidc-peer-server.mjs"), String(PEER_PORT), PEER_CLIENT, PEER_SECRET],
    {
      cwd: root,
      env: { ...process.env, NODE_ENV: "production" },
      stdout: "ignore",
      stderr: "ignore",
    },
  );
  const base = `http://127.0.0.1:${PEER_PORT}`;
  await waitFor(`${base}/jwks`);
  const basic = btoa(`${PEER_CLIENT}:${PEER_SECRET}`);
  return {
    target: {
      name: "oidc-provider",
      introspect: `${base}/token/introspection`,
      discovery: `${base}/.well-known/openid-configuration`,
      jwks: `${base}/jwks`,
      token: `${base}/token`,
      basic,
      accessToken: () => accessTokenOf(`${base}/token`, basic),
    },
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

type Endpoint = "introspection" | "discovery" | "jwks" | "client_credentials";
/** BENCH_PEER_ENDPOINTS (comma-separated keys) measures only some of them. */
const ENDPOINTS: Array<{ key: Endpoint; label: string; connections: number }> = [
  { key: "introspection" as const, label: "introspection `POST` of a client-credentials token", connections: 64 },
  { key: "discovery" as const, label: "discovery `GET`", connections: 64 },
  { key: "jwks" as const, label: "JWKS `GET`", connections: 64 },
  { key: "client_credentials" as const, label: "client credentials grant `POST`", connections: 16 },
].filter((e) => !process.env.BENCH_PEER_ENDPOINTS || process.env.BENCH_PEER_ENDPOINTS.split(",").includes(e.key));

async function measureEndpoint(t: Target, e: Endpoint, seconds: number, connections: number, token: string) {
  const o = { connections, seconds };
  if (e === "introspection")
    return wrk(t.introspect, { ...o, script: "introspect.lua", env: { BENCH_BASIC: t.basic, BENCH_TOKEN: token } });
  if (e === "client_credentials")
    return wrk(t.token, { ...o, script: "client-credentials.lua", env: { BENCH_BASIC: t.basic } });
  return wrk(e === "discovery" ? t.discovery : t.jwks, o);
}

const loadAverage = async () => (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");

/**
 * The section. `tesseras` are started Tessera targets (name → process), seeded by bench/seed.ts;
 * `ceilingUrl` a bare Bun.serve. Rows: per endpoint, each target's median and its ratio to the peer.
 */
export async function oidcPeerSection(
  tesseras: Array<[string, Tessera]>,
  ceilingUrl: string,
  seconds: number,
  rounds: number,
): Promise<PeerRow[]> {
  const peer = await startPeer();
  try {
    const targets = [...(await Promise.all(tesseras.map(([n, t]) => tesseraTarget(n, t)))), peer.target];
    const runs = new Map<string, WrkResult[]>();
    const loads: string[] = [];
    const record = (key: string, r: WrkResult) => runs.set(key, [...(runs.get(key) ?? []), r]);
    for (const t of targets)
      for (const e of ENDPOINTS) await measureEndpoint(t, e.key, 2, e.connections, await t.accessToken()); // JIT warm-up
    for (let round = 0; round < rounds; round++) {
      loads.push(await loadAverage());
      record("bare", await wrk(ceilingUrl, { connections: 64, seconds }));
      for (const e of ENDPOINTS)
        for (const t of targets) {
          const token = await t.accessToken(); // fresh: the peer's expire after 10 minutes
          record(`${t.name}\0${e.key}`, await measureEndpoint(t, e.key, seconds, e.connections, token));
        }
      console.error(`oidc-peer: round ${round + 1}/${rounds} done, load average ${loads.at(-1)}`);
    }
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const median = (key: string): WrkResult => {
      const rs = runs.get(key)!;
      return { rps: mid(rs.map((r) => r.rps)), p50: mid(rs.map((r) => r.p50)), p99: mid(rs.map((r) => r.p99)) };
    };
    const range = (key: string) => {
      const xs = runs.get(key)!.map((r) => Math.round(r.rps).toLocaleString("en"));
      return xs.length > 1 ? ` (rounds: ${xs.join(", ")})` : "";
    };
    const bare = median("bare");
    const rows: PeerRow[] = [];
    const loadNote = `load average at each round: ${loads.join(" / ")}`;
    for (const e of ENDPOINTS) {
      const peerResult = median(`${peer.target.name}\0${e.key}`);
      for (const t of targets) {
        const r = median(`${t.name}\0${e.key}`);
        const vsPeer = t === peer.target ? "peer" : `${(r.rps / peerResult.rps).toFixed(2)} × oidc-provider`;
        const vsBare = e.key === "client_credentials" ? "" : `; ${(r.rps / bare.rps).toFixed(2)} × bare`;
        rows.push({
          target: `${e.label} (${e.connections} conns), ${t.name}`,
          result: r,
          extra: `${vsPeer}${vsBare}${range(`${t.name}\0${e.key}`)}`,
        });
      }
    }
    rows.push({ target: "bare `Bun.serve` GET (64 conns, ceiling)", result: bare, extra: loadNote });
    return rows;
  } finally {
    await peer.stop();
  }
}
