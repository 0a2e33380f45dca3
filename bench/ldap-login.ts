// What an LDAP login costs, in process on a fresh PGlite database against a private slapd (the
// test helper: needs the Debian packages slapd and ldap-utils): the median and p95 latency of a
// successful login in each connection mode (plain, STARTTLS, ldaps://; service-account search and
// direct DN), and how long a login waits on a directory that accepts TCP and never answers.
// Usage: npx bun bench/ldap-login.ts [attempts]
import { createServer, type Socket } from "node:net";
import { createApp } from "../src/app.ts";
import { parseConfig } from "../src/config/config.ts";
import { openDatabase } from "../src/db/index.ts";
import { silentLogger } from "../src/observe/log.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { startServices } from "../src/boot/startup.ts";
import { ACME_LDIF, PEOPLE_DN, SERVICE_DN, SERVICE_PASSWORD } from "../tests/helpers/ldap-directory.ts";
import { BASE_DN, startSlapd } from "../tests/helpers/slapd.ts";
import { emails, ldapConfigs, tenantDomains, tenants, users } from "../src/db/schema.ts";

const attempts = Number(process.argv[2] ?? 50);
const slapd = await startSlapd(ACME_LDIF);
const config = parseConfig({
  token_cleanup_interval: 0,
  ldap: { tls_ca_file: slapd.caFile },
  login_throttling: { enabled: false },
  max_user_concurrent_sessions: 100_000,
});
const app = await buildContext(config, await openDatabase({ dataDir: "memory://" }), silentLogger);
await startServices(app);
const http = createApp(app);

const tenantUuid = crypto.randomUUID();
await app.db.insert(tenants).values({
  uuid: tenantUuid,
  name: "ACME",
  slug: "acme",
  parentUuid: app.topTenantUuid,
  defaultAuthenticationMethod: "ldap",
});
await app.db.insert(tenantDomains).values({ tenantUuid, name: "acme.example.com" });
const userUuid = crypto.randomUUID();
await app.db
  .insert(users)
  .values({ uuid: userUuid, username: "alice", tenantUuid, purpose: "user", authenticationMethod: "ldap" });
await app.db.insert(emails).values({ address: "alice@acme.example.com", main: true, confirmed: true, userUuid });

type Mode = Partial<typeof ldapConfigs.$inferInsert>;
const base = {
  tenantUuid,
  host: slapd.host,
  port: slapd.port,
  bindDn: SERVICE_DN,
  bindPassword: SERVICE_PASSWORD,
  userBaseDn: BASE_DN,
  userLoginAttribute: "uid",
  userEmailAttribute: "mail",
  protocolSecurity: null,
  searchFilters: null,
};
const configure = async (mode: Mode) => {
  await app.db.delete(ldapConfigs);
  await app.db.insert(ldapConfigs).values({ ...base, ...mode });
};
const login = async () => {
  const started = performance.now();
  const r = await http.request(
    "/0.1/token",
    {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("alice:alice-ldap")}` },
      body: JSON.stringify({ domain_name: "acme.example.com" }),
    },
    { remoteAddr: "127.0.0.1" },
  );
  await r.text();
  return { ms: performance.now() - started, status: r.status };
};
const measure = async (expected: number, n = attempts) => {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const { ms, status } = await login();
    if (status !== expected) throw new Error(`expected ${expected}, got ${status}`);
    times.push(ms);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)]!, p95: times[Math.floor(times.length * 0.95)]! };
};

const rows: Array<[string, { p50: number; p95: number }]> = [];
const modes: Array<[string, Mode]> = [
  ["plain, service-account search", {}],
  ["plain, direct DN", { bindDn: null, bindPassword: null, userBaseDn: PEOPLE_DN }],
  ["STARTTLS, service-account search", { protocolSecurity: "tls" }],
  ["ldaps://, service-account search", { protocolSecurity: "ldaps", port: slapd.ldapsPort }],
];
for (const [name, mode] of modes) {
  await configure(mode);
  await login(); // warm-up
  rows.push([name, await measure(200)]);
}
const sockets: Socket[] = [];
const silent = createServer((s) => void sockets.push(s));
await new Promise<void>((r) => silent.listen(0, "127.0.0.1", () => r()));
await configure({ port: (silent.address() as { port: number }).port });
rows.push(["silent directory (refused, 401)", await measure(401, 3)]);

console.log(`| LDAP login (${attempts} attempts each) | p50 | p95 |\n|---|---:|---:|`);
for (const [name, r] of rows) console.log(`| ${name} | ${r.p50.toFixed(1)} ms | ${r.p95.toFixed(1)} ms |`);
for (const s of sockets) s.destroy();
silent.close();
await closeContext(app);
await slapd.close();
