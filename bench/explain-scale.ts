// The statements behind each goal of issue 29, logged as the services build them and explained on a
// loaded database (bench/seed-scale.ts): `EXPLAIN (ANALYZE, BUFFERS)` of each, each in a transaction
// rolled back (writes included: the move's UPDATE shows its triggers' times). Plans and buffer
// counts do not depend on a quiet machine the way wall-clock figures do.
//
//   npx bun bench/explain-scale.ts [--database tessera_scale] [--only tenants,users,create,move,purge,startup]
import { parseConfig } from "../src/config/config.ts";
import type { AppContext } from "../src/boot/context.ts";
import { openDatabase } from "../src/db/index.ts";
import { inTransaction } from "../src/db/tx.ts";
import type { Caller } from "../src/domain/caller.ts";
import type { ListParams } from "../src/domain/collection.ts";
import { silentLogger } from "../src/observe/log.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { purgeBatch } from "../src/services/auth/token-cleanup.ts";
import { createTenant, listTenants, setTenantParent } from "../src/services/identity/tenants.ts";
import { listUsers } from "../src/services/identity/users.ts";
import { syncPoliciesOnStartup } from "../src/services/identity/policy-sync.ts";
import { PG_URL } from "./lib.ts";
import { subtreeSize, tenantUuid } from "./seed-scale.ts";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

interface Logged {
  text: string;
  params: unknown[];
}

const url = new URL(PG_URL);
url.pathname = `/${arg("database") ?? "tessera_scale"}`;
const only = arg("only")?.split(",");
const config = parseConfig({ db_uri: url.toString() });
const database = await openDatabase({ url: config.db_uri, timeoutSeconds: 600 });
const app: AppContext = await buildContext(config, database, silentLogger);
// postgres.js reads `options.debug` at each query: every statement the services send is logged.
const client = (app.db as unknown as { $client: { options: Record<string, unknown>; unsafe: Function } }).$client;
let log: Logged[] = [];
const { default: postgres } = await import("postgres");
const explainer = postgres(config.db_uri!, { max: 1, onnotice: () => {}, connection: { jit: "off" } });
client.options.debug = (_conn: number, text: string, params: unknown[]) => log.push({ text, params: [...params] });

const caller = (tenant: string): Caller => ({
  token: {} as Caller["token"],
  userUuid: null,
  tenantUuid: tenant,
  ownTenantUuid: tenant,
});
const params = (p: Partial<ListParams>): ListParams => ({
  limit: undefined,
  offset: 0,
  order: undefined,
  direction: "asc",
  search: undefined,
  recurse: false,
  filters: {},
  ...p,
});

/** `undo` runs before the statements are explained again (a move is explained from where it started). */
async function explain(title: string, run: () => Promise<unknown>, undo?: () => Promise<unknown>): Promise<void> {
  if (only && !only.some((o) => title.startsWith(o))) return;
  log = [];
  const t = performance.now();
  await run();
  const ms = performance.now() - t;
  const captured = log;
  log = [];
  await undo?.();
  log = captured;
  const statements = log.filter((q) => !/^(begin|commit|rollback|savepoint|release)/i.test(q.text.trim()));
  client.options.debug = undefined;
  console.log(`\n## ${title}: ${ms.toFixed(1)} ms, ${statements.length} statements (wall clock, one run)\n`);
  for (const q of statements) {
    console.log("```sql");
    console.log(q.text.replace(/\s+/g, " ").slice(0, 1500));
    if (q.params.length) console.log(`-- params: ${JSON.stringify(q.params).slice(0, 300)}`);
    console.log("```\n```");
    try {
      await explainer.begin(async (s) => {
        const rows = await s.unsafe(`explain (analyze, buffers) ${q.text}`, q.params as never[]);
        for (const r of rows) console.log(Object.values(r)[0]);
        throw new Rollback();
      });
    } catch (e) {
      if (!(e instanceof Rollback)) console.log(`(not explained: ${(e as Error).message})`);
    }
    console.log("```");
  }
  client.options.debug = (_conn: number, text: string, p: unknown[]) => log.push({ text, params: [...p] });
}
class Rollback extends Error {}

const top = app.topTenantUuid;
const sub = tenantUuid(1);
await explain("tenants: GET /tenants?limit=5000, master admin", () =>
  listTenants(app, caller(top), params({ limit: 5000 }), undefined),
);
await explain(`tenants: GET /tenants?limit=10, admin of tenant 1 (${subtreeSize(1, 100_000)} tenants)`, () =>
  listTenants(app, caller(sub), params({ limit: 10 }), undefined),
);
for (const [who, tenant] of [
  ["master admin", top],
  ["subtree admin", sub],
] as const)
  await explain(`users: GET /users?recurse=true&search=nardbois&limit=10, ${who}`, () =>
    listUsers(app, caller(tenant), params({ recurse: true, search: "nardbois", limit: 10 })),
  );
class Undo extends Error {}
await explain("create: POST /tenants (rolled back)", () =>
  inTransaction(app, async (tx) => {
    await createTenant(app, tx, caller(top), top, { name: "explained" });
    throw new Undo();
  }).catch((e) => {
    if (!(e instanceof Undo)) throw e;
  }),
);
// The move there and back (tenant 1 under tenant 2, then home).
await explain(
  `move: PUT /tenants/{tenant 1}/parent/{tenant 2} (${subtreeSize(1, 100_000) - 1} descendants)`,
  () => setTenantParent(app, caller(top), sub, tenantUuid(2)),
  () => setTenantParent(app, caller(top), sub, top),
);
await explain("purge: one batch of the expired-token purge (not rolled back)", () => purgeBatch(app));

await explain("startup: syncPoliciesOnStartup (update_policy_on_startup)", () => syncPoliciesOnStartup(app));

await explainer.end();
await closeContext(app);
