// Seeds a fresh database for the benchmark: a user `bench` whose only policy holds the ACL given
// as JSON in argv[2] (a realistic ACL of a Wazo user, negations included).
import { loadConfig } from "../src/config.ts";
import { openDatabase } from "../src/db/index.ts";
import { accesses, policies, policyAccesses, userPolicies } from "../src/db/schema.ts";
import { silentLogger } from "../src/log.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { bootstrapUser } from "../src/services/bootstrap.ts";
import { eq } from "drizzle-orm";

const acl = JSON.parse(process.argv[2] ?? "[]") as string[];
const config = loadConfig([]);
const app = await buildContext(config, await openDatabase({ url: config.db_uri, dataDir: config.data_dir }), silentLogger);
try {
  const { userUuid } = await bootstrapUser(app, "bench", "bench-password");
  await app.db.delete(userPolicies).where(eq(userPolicies.userUuid, userUuid));
  const [policy] = await app.db.insert(policies).values({ name: "bench", slug: "bench", tenantUuid: app.topTenantUuid }).returning();
  for (const access of acl) {
    const [row] = await app.db.insert(accesses).values({ access }).onConflictDoUpdate({ target: accesses.access, set: { access } }).returning();
    await app.db.insert(policyAccesses).values({ policyUuid: policy!.uuid, accessId: row!.id });
  }
  await app.db.insert(userPolicies).values({ userUuid, policyUuid: policy!.uuid });
} finally {
  await closeContext(app);
}
