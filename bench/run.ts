// `npm run bench [-- section...]`: every figure of the benchmark table of docs/benchmarks.md, measured in one run
// on this machine, each goal printed as a ratio to a reference measured in the same run. Sections:
//   token   HEAD /0.1/token/{t}?scope= (PGlite, 64 connections): default configuration, every check
//           in the access log, the metrics listener on, and a bare Bun.serve answering 204 (the
//           runtime's ceiling)
//   login   POST /0.1/token (4 connections) with argon2id and with pbkdf2_sha512, on PGlite and
//           PostgreSQL; the token check's p99 (16 connections) during a 30 s login storm
//   lists   GET /0.1/users?limit=10 (16 connections) on PGlite, PostgreSQL, PostgreSQL with 100,000
//           users (the same page again: the list cache); on those 100,000 users, a different page
//           per request (never cached) and substring searches (p50, one connection, never cached)
//   workers the token check on PostgreSQL with workers: 1 and workers: 2
//   startup first start and restart to the first answer, peak and idle memory (bench/startup.ts)
//   oidc    OpenID Connect (PGlite, argon2id): introspection of a cached access token (64 connections)
//           against the bare Bun.serve ceiling; the sign-in + code exchange and the exchange alone
//           (4 in flight) against POST /0.1/token's login (bench/oidc.ts)
//   upstream a sign-in through a tenant's upstream OpenID provider (oidc-provider under Node) against a
//           password sign-in on the same hosted page: Tessera's CPU per sign-in (bench/upstream-login.ts)
//   jwt     HEAD /0.1/token/{t}?scope= (PGlite, 64 connections) on an RFC 9068 JWT access token
//           against the same check on an opaque token of the same client (issue 42: within 10 %)
//   oidc-peer the OAuth endpoints side by side with panva's oidc-provider 9 under Node (introspection,
//           discovery, JWKS, client credentials grant; Tessera on PGlite and PostgreSQL): see
//           bench/oidc-peer.ts
//   audit   (not run by default) GET /0.1/audit over 10,000,000 entries and the cost of recording
//           on logins and admin writes: see bench/audit.ts
//   scale   (not run by default) the goals of issue 29 on 100,000 tenants and 1,000,000 users,
//           loaded by bench/seed-scale.ts: see bench/scale.ts
// BENCH_SECONDS (default 10) is the length of each measurement, BENCH_ROUNDS (default 3) the number
// of interleaved rounds of the token section; BENCH_DATABASE_URL the PostgreSQL
// server (a scratch database is created and dropped; sections needing it are skipped without one).
import { STARTUP_HEADER, startupRows } from "./startup.ts";
import {
  login,
  measure,
  root,
  scratchDatabase,
  startTessera,
  waitFor,
  wrk,
  type Tessera,
  type WrkResult,
} from "./lib.ts";
import { printScale, scaleSection, type ScaleRow } from "./scale.ts";
import { exchange, registerClient, signIn, timed } from "./oidc.ts";
import { auditSection } from "./audit.ts";
import { oidcPeerSection } from "./oidc-peer.ts";
import { upstreamSection } from "./upstream-login.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
/** Interleaved rounds of the token section (median reported). */
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const sections = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ["token", "login", "lists", "workers", "startup", "oidc", "upstream", "jwt", "oidc-peer"];
const ACL = [
  "confd.users.me.read",
  "confd.users.me.update",
  "confd.users.me.funckeys.*.read",
  "confd.users.me.lines.read",
  "calld.users.me.calls.read",
  "calld.users.me.calls.create",
  "calld.users.me.calls.*.delete",
  "chatd.users.me.#",
  "dird.directories.lookup.*.read",
  "dird.personal.#",
  "webhookd.users.me.subscriptions.#",
  "websocketd",
  "events.users.me.#",
  "events.calls.me",
  "auth.users.me.tokens.#",
  "auth.users.me.external.#",
  "!confd.users.me.delete",
  "!calld.users.me.calls.*.update",
  "!auth.users.me.tokens.mobile.delete",
  "!dird.personal.*.delete",
];
const SCOPE = "calld.users.me.calls.read";
// Logins are measured at the production cost (OWASP's argon2id minimum, wazo-auth's 250,000 PBKDF2 rounds).
const HASH = {
  argon2id: "password_hash_algorithm: argon2id",
  pbkdf2_sha512: "password_hash_algorithm: pbkdf2_sha512\npassword_hash_iterations: 250000",
};

const rows: string[] = [];
const scaleRows: ScaleRow[] = [];
const notes: string[] = [];
const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : "?");
function row(target: string, r: WrkResult, extra = "") {
  rows.push(
    `| ${target} | ${Math.round(r.rps).toLocaleString("en")} | ${fmt(r.p50)} ms | ${fmt(r.p99)} ms | ${extra} |`,
  );
  console.error(rows.at(-1)); // as it comes, so a failed section leaves the others' figures
}

const pgDb = sections.some((s) => s !== "token") ? await scratchDatabase() : null;
if (!pgDb && sections.some((s) => s !== "token")) notes.push("PostgreSQL unreachable: PostgreSQL figures skipped");

/** A Tessera seeded by bench/seed.ts, on PGlite (`pg` false) or the scratch PostgreSQL database. */
async function seeded(pg: boolean, configYaml: string, users = 0, cwd?: string, dbUrl?: string) {
  const dbLine = pg ? `db_uri: "${dbUrl ?? pgDb!.url}"\n` : "";
  return startTessera(
    `${dbLine}${configYaml}`,
    ({ run }) => run("bench/seed.ts", JSON.stringify(ACL), String(users)),
    cwd,
  );
}

async function resetPg() {
  // Each PostgreSQL target starts from an empty database: drop every table Tessera made.
  const { default: postgres } = await import("postgres");
  const c = postgres(pgDb!.url, { max: 1, onnotice: () => {} });
  await c.unsafe(
    "drop schema public cascade; create schema public; drop schema if exists drizzle cascade; drop schema if exists tessera cascade",
  );
  await c.end();
}

/** bench/ceiling.ts (a bare Bun.serve) on `port`, once it answers. */
async function startCeiling(port: number) {
  const ceiling = Bun.spawn([process.execPath, "bench/ceiling.ts", String(port)], {
    cwd: root,
    stdout: "ignore",
    stderr: "ignore",
  });
  await waitFor(`http://127.0.0.1:${port}/`);
  return ceiling;
}

async function tokenSection() {
  // Every target runs at once (idle ones cost nothing) and is measured in interleaved rounds, so a
  // change of the machine's load during the section shifts every figure alike; medians reported.
  const ceilingPort = 9589;
  const ceiling = await startCeiling(ceilingPort);
  const o = { connections: 64, seconds, script: "head.lua" };
  const configs = {
    default: "log_level: info",
    access_log: "log_level: info\naccess_log: true",
    metrics: "log_level: info\nmetrics:\n  port: 9689",
    cors_off: "log_level: info\nrest_api: {cors: {enabled: false}}",
  };
  const started: Tessera[] = [];
  const urls: Record<string, string> = { bare: `http://127.0.0.1:${ceilingPort}/` };
  const other = process.env.BENCH_COMPARE; // A/B: another checkout's default, in the same rounds
  try {
    for (const [name, cfg] of [...Object.entries(configs), ...(other ? ([["other", configs.default]] as const) : [])]) {
      const t = await seeded(false, cfg, 0, name === "other" ? other : undefined);
      started.push(t);
      urls[name] = `${t.base}/token/${await login(t.base, "bench", "bench-password")}?scope=${SCOPE}`;
    }
    const runs: Record<string, WrkResult[]> = {};
    for (const [name, url] of Object.entries(urls)) await wrk(url, { ...o, seconds: 3 }); // JIT warm-up
    for (let round = 0; round < rounds; round++) {
      for (const [name, url] of Object.entries(urls)) (runs[name] ??= []).push(await wrk(url, o));
    }
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const median = (name: string): WrkResult => ({
      rps: mid(runs[name]!.map((r) => r.rps)),
      p50: mid(runs[name]!.map((r) => r.p50)),
      p99: mid(runs[name]!.map((r) => r.p99)),
    });
    const [dflt, logged, metered, bare] = [median("default"), median("access_log"), median("metrics"), median("bare")];
    row(
      `\`HEAD /0.1/token/{t}?scope=\` (64 conns), default config (\`log_level: info\`, \`access_log: false\`), PGlite`,
      dflt,
      `${(dflt.rps / bare.rps).toFixed(2)} × bare (goal ≥ 0.65); p99 goal < 5 ms`,
    );
    row(
      "same with `access_log: true` (a line per check)",
      logged,
      `${(logged.rps / bare.rps).toFixed(2)} × bare (goal ≥ 0.50)`,
    );
    row(
      "same with the metrics listener on (`metrics.port`)",
      metered,
      `${(metered.rps / dflt.rps).toFixed(2)} × default (goal ≥ 0.95)`,
    );
    const corsOff = median("cors_off");
    row(
      "same with CORS off (`rest_api.cors.enabled: false`: `Origin` not read)",
      corsOff,
      `${(corsOff.rps / bare.rps).toFixed(2)} × bare; ${(corsOff.rps / dflt.rps).toFixed(2)} × default`,
    );
    if (other) {
      const o2 = median("other");
      row(
        `default config, ${other}`,
        o2,
        `${(o2.rps / bare.rps).toFixed(2)} × bare; this tree ÷ it: ${(dflt.rps / o2.rps).toFixed(2)}`,
      );
    }
    row("bare `Bun.serve` answering 204 (ceiling)", bare, "1.00");
  } finally {
    for (const t of started) await t.stop();
    ceiling.kill();
  }
}

async function loginSection() {
  const o = { connections: 4, seconds, script: "login.lua", env: { BENCH_BASIC: btoa("bench:bench-password") } };
  const kinds: Array<[string, boolean, keyof typeof HASH]> = [
    ["PGlite", false, "argon2id"],
    ["PGlite", false, "pbkdf2_sha512"],
  ];
  if (pgDb) kinds.push(["PostgreSQL", true, "argon2id"], ["PostgreSQL", true, "pbkdf2_sha512"]);
  for (const [db, pg, algo] of kinds) {
    if (pg) await resetPg();
    const t = await seeded(pg, `log_level: info\n${HASH[algo]}`);
    const r = await measure(`${t.base}/token`, o);
    row(
      `login \`POST /0.1/token\` (4 conns), ${algo}, ${db}`,
      r,
      `${(r.rps / 16.0).toFixed(1)} × wazo-auth's 16.0/s (goal ≥ 3)`,
    );
    await t.stop();
  }
  // The hot path while logins keep every core busy hashing.
  const t = await seeded(false, `log_level: info\n${HASH.argon2id}`);
  const token = await login(t.base, "bench", "bench-password");
  const storm = wrk(`${t.base}/token`, { ...o, seconds: 30 });
  await Bun.sleep(2000);
  const during = await wrk(`${t.base}/token/${token}?scope=${SCOPE}`, {
    connections: 16,
    seconds: 26,
    script: "head.lua",
  });
  const logins = await storm;
  row(
    "`HEAD /0.1/token/{t}` (16 conns) during a 30 s argon2id login storm (4 conns), PGlite",
    during,
    `p99 goal < 10 ms; ${fmt(logins.rps)} logins/s meanwhile`,
  );
  await t.stop();
}

async function listsSection() {
  const o = { connections: 16, seconds, script: "get.lua" };
  const targets: Array<[string, boolean, number]> = [["PGlite", false, 100]];
  if (pgDb) targets.push(["PostgreSQL", true, 100], ["PostgreSQL, 100,000 users", true, 100_000]);
  for (const [db, pg, users] of targets) {
    if (pg) await resetPg();
    const t = await seeded(pg, "log_level: info", users);
    const token = await login(t.base, "admin", "admin-password");
    const env = { BENCH_TOKEN: token };
    // The same page asked again and again: answered from the list cache after the first time.
    const r = await measure(`${t.base}/users?limit=10`, { ...o, env });
    const goal = users > 1000 ? "goal ≥ 2,000/s" : pg ? "goal ≥ 5,000/s" : "goal ≥ 2,000/s";
    row(`\`GET /0.1/users?limit=10\` (16 conns), ${db}`, r, goal);
    if (users > 1000) {
      // Every request a different page (get-uncached.lua): what the database costs on a cache miss.
      const u = { ...o, script: "get-uncached.lua", env };
      row(
        `same, every request a different page (never cached), ${db}`,
        await measure(`${t.base}/users?order=username`, u),
        "",
      );
      for (const term of ["nardbois", "mar"]) {
        const s = await measure(`${t.base}/users?search=${term}`, {
          ...u,
          connections: 1,
          seconds: Math.min(seconds, 5),
        });
        row(
          `\`GET /0.1/users?limit=10&search=${term}\` (1 conn), every request a different page (never cached), ${db}`,
          s,
          "p50 goal < 50 ms",
        );
      }
    }
    await t.stop();
  }
}

async function workersSection() {
  if (!pgDb) return;
  const o = { connections: 64, seconds, script: "head.lua" };
  const results: WrkResult[] = [];
  for (const workers of [1, 2]) {
    await resetPg();
    const t = await seeded(true, `log_level: info\nworkers: ${workers}`);
    const token = await login(t.base, "bench", "bench-password");
    // Warm every worker's cache: new connections land on either process.
    for (let i = 0; i < 50; i++)
      await fetch(`${t.base}/token/${token}?scope=${SCOPE}`, { method: "HEAD", headers: { Connection: "close" } });
    results.push(await measure(`${t.base}/token/${token}?scope=${SCOPE}`, o));
    await t.stop();
  }
  row("`HEAD /0.1/token/{t}?scope=` (64 conns), PostgreSQL, `workers: 1`", results[0]!, "");
  row("same with `workers: 2`", results[1]!, `${(results[1]!.rps / results[0]!.rps).toFixed(2)} × workers: 1`);
}

async function oidcSection() {
  const ceilingPort = 9588;
  const ceiling = await startCeiling(ceilingPort);
  const t = await seeded(false, `log_level: info\n${HASH.argon2id}`);
  try {
    const client = await registerClient(t);
    const first = await signIn(t, client, "bench", "bench-password");
    const token = await exchange(t, client, first.code, first.verifier);
    const o = {
      connections: 64,
      seconds,
      script: "introspect.lua",
      env: { BENCH_BASIC: btoa(`${client.client_id}:${client.client_secret}`), BENCH_TOKEN: token },
    };
    const bare = await measure(`http://127.0.0.1:${ceilingPort}/`, { connections: 64, seconds, script: "head.lua" });
    const introspection = await measure(`${t.base}/oidc/introspect`, o);
    const barePost = await measure(`http://127.0.0.1:${ceilingPort}/`, o);
    row(
      "OIDC introspection `POST /0.1/oidc/introspect` (64 conns) of a cached access token, PGlite",
      introspection,
      `${(introspection.rps / bare.rps).toFixed(2)} × bare HEAD ${Math.round(bare.rps).toLocaleString("en")}/s (goal ≥ 0.5); ${(introspection.rps / barePost.rps).toFixed(2)} × bare POST`,
    );
    row("bare `Bun.serve` reading the same POST and answering JSON (POST ceiling)", barePost, "");
    const logins = await measure(`${t.base}/token`, {
      connections: 4,
      seconds,
      script: "login.lua",
      env: { BENCH_BASIC: btoa("bench:bench-password") },
    });
    const n = Math.max(40, Math.round(logins.rps * seconds));
    const flows = await timed(n, 4, async () => {
      const { code, verifier } = await signIn(t, client, "bench", "bench-password");
      await exchange(t, client, code, verifier);
    });
    row(
      "OIDC sign-in through the hosted page + code exchange (4 in flight), argon2id, PGlite",
      flows,
      `${(flows.rps / logins.rps).toFixed(2)} × \`POST /0.1/token\` logins ${fmt(logins.rps)}/s (goal ≈ 1: bounded by the hash)`,
    );
    const codes: Array<{ code: string; verifier: string }> = [];
    for (let i = 0; i < Math.min(n, 300); i++) codes.push(await signIn(t, client, "bench", "bench-password"));
    const exchanges = await timed(codes.length, 4, (i) => exchange(t, client, codes[i]!.code, codes[i]!.verifier));
    row(
      "OIDC code exchange alone `POST /0.1/oidc/token` (4 in flight; ES256 ID token signed with the key in memory), PGlite",
      exchanges,
      `${(exchanges.rps / logins.rps).toFixed(0)} × logins: the exchange is not the bound`,
    );
  } finally {
    await t.stop();
    ceiling.kill();
  }
}

async function upstreamRows() {
  const t = await seeded(
    false,
    `log_level: info\n${HASH.argon2id}\noutbound_http: {allow_private_targets: ["127.0.0.0/8"], allow_http: true}`,
  );
  try {
    const client = await registerClient(t);
    const n = Math.max(20, Math.round(seconds * 5));
    const [password, upstream] = await upstreamSection(t, client, n);
    row(password!.target, password!.result, `Tessera CPU ${fmt(password!.cpuMs)} ms per sign-in`);
    row(
      upstream!.target,
      upstream!.result,
      `Tessera CPU ${fmt(upstream!.cpuMs)} ms per sign-in: ${(upstream!.cpuMs / password!.cpuMs).toFixed(2)} × the password sign-in's (goal ≤ 1)`,
    );
  } finally {
    await t.stop();
  }
}

/** Scratch databases made by a section beside `pgDb`, dropped at the end. */
const extraDatabases: Array<{ drop(): Promise<void> }> = [];

/**
 * The token check of an RFC 9068 JWT access token (client credentials for a `jwt` resource server)
 * against the opaque token of the same client and ACL, measured in interleaved rounds.
 */
async function jwtSection() {
  const t = await seeded(false, "log_level: info");
  try {
    const admin = await login(t.base, "admin", "admin-password");
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${t.base}${path}`, {
        method: "POST",
        headers: { "X-Auth-Token": admin, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (r.status !== 201) throw new Error(`${path}: ${r.status} ${await r.text()}`);
      return r.json() as Promise<Record<string, string>>;
    };
    const acl = ["calld.#", "confd.users.*.read"];
    const client = await post("/oidc/clients", {
      name: "bench-daemon",
      client_type: "confidential",
      redirect_uris: [],
      grant_types: ["client_credentials"],
      acl,
    });
    await post("/oidc/resources", { identifier: "https://calld.bench", acl, token_format: "jwt" });
    const grant = async (resource?: string) => {
      const r = await fetch(`${t.base}/oidc/token`, {
        method: "POST",
        headers: {
          Authorization: `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}`,
          "Content-Type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ grant_type: "client_credentials", ...(resource ? { resource } : {}) }),
      });
      if (r.status !== 200) throw new Error(`token: ${r.status} ${await r.text()}`);
      return ((await r.json()) as { access_token: string }).access_token;
    };
    const scope = "calld.calls.read";
    const urls = {
      opaque: `${t.base}/token/${await grant()}?scope=${scope}`,
      jwt: `${t.base}/token/${await grant("https://calld.bench")}?scope=${scope}`,
    };
    const o = { connections: 64, seconds, script: "head.lua" };
    const runs: Record<string, WrkResult[]> = {};
    for (const url of Object.values(urls)) await wrk(url, { ...o, seconds: 3 }); // JIT warm-up
    for (let round = 0; round < rounds; round++)
      for (const [name, url] of Object.entries(urls)) (runs[name] ??= []).push(await wrk(url, o));
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const median = (name: string): WrkResult => ({
      rps: mid(runs[name]!.map((r) => r.rps)),
      p50: mid(runs[name]!.map((r) => r.p50)),
      p99: mid(runs[name]!.map((r) => r.p99)),
    });
    const [opaque, jwt] = [median("opaque"), median("jwt")];
    row("`HEAD /0.1/token/{t}?scope=` (64 conns) of a client's opaque token, PGlite", opaque, "1.00");
    row(
      "same, of an RFC 9068 JWT access token of the same client (`resource=` a `jwt` resource server)",
      jwt,
      `${(jwt.rps / opaque.rps).toFixed(2)} × opaque (goal ≥ 0.90)`,
    );
  } finally {
    await t.stop();
  }
}

async function oidcPeer() {
  const ceilingPort = 9587;
  const ceiling = await startCeiling(ceilingPort);
  const tesseras: Array<[string, Tessera]> = [];
  try {
    tesseras.push(["Tessera PGlite", await seeded(false, "log_level: info")]);
    if (pgDb) {
      await resetPg();
      tesseras.push(["Tessera PostgreSQL", await seeded(true, "log_level: info")]);
    }
    // A/B: another checkout (BENCH_COMPARE=path) measured in the same interleaved rounds.
    const other = process.env.BENCH_COMPARE;
    if (other) {
      tesseras.push([`Tessera PGlite (${other})`, await seeded(false, "log_level: info", 0, other)]);
      const otherDb = pgDb ? await scratchDatabase() : null;
      if (otherDb) {
        extraDatabases.push(otherDb);
        tesseras.push([`Tessera PostgreSQL (${other})`, await seeded(true, "log_level: info", 0, other, otherDb.url)]);
      }
    }
    const peerRounds = Number(process.env.BENCH_ROUNDS ?? 3);
    const peerSeconds = Number(process.env.BENCH_PEER_SECONDS ?? 5);
    for (const r of await oidcPeerSection(tesseras, `http://127.0.0.1:${ceilingPort}/`, peerSeconds, peerRounds))
      row(r.target, r.result, r.extra);
  } finally {
    for (const [, t] of tesseras) await t.stop();
    for (const db of extraDatabases.splice(0)) await db.drop();
    ceiling.kill();
  }
}

const started = Date.now();
const startup: string[] = [];
try {
  for (const s of sections) {
    if (s === "token") await tokenSection();
    else if (s === "login") await loginSection();
    else if (s === "lists") await listsSection();
    else if (s === "workers") await workersSection();
    else if (s === "startup") startup.push(...(await startupRows()));
    else if (s === "oidc") await oidcSection();
    else if (s === "upstream") await upstreamRows();
    else if (s === "jwt") await jwtSection();
    else if (s === "oidc-peer") await oidcPeer();
    else if (s === "scale") scaleRows.push(...(pgDb ? await scaleSection(seconds, pgDb.url) : []));
    else if (s === "audit")
      for (const r of await auditSection(seconds)) rows.push(`| ${r.figure} | ${r.value} | ${r.goal} |`);
    else
      throw new Error(
        `unknown section ${s} (token, login, lists, workers, startup, oidc, upstream, jwt, oidc-peer, scale, audit)`,
      );
  }
} finally {
  await pgDb?.drop();
}
const load = (
  await Bun.file("/proc/loadavg")
    .text()
    .catch(() => "?")
)
  .split(" ")
  .slice(0, 3)
  .join(" ");
console.log(
  `wrk -t1, ${seconds} s per figure after a 3 s warm-up, loopback, ${navigator.hardwareConcurrency} cores, load average ${load}, ${Math.round((Date.now() - started) / 1000)} s in all\n`,
);
console.log("| target | requests/s | p50 | p99 | ratio / goal |");
console.log("|---|---:|---:|---:|---|");
for (const r of rows) console.log(r);
for (const n of notes) console.log(`\n${n}`);
if (startup.length) console.log(`\n${STARTUP_HEADER}\n${startup.join("\n")}`);
if (scaleRows.length) printScale(scaleRows);
