// Seeds a fresh database for the benchmark (configuration from TESSERA_CONFIG):
//   - `admin` / `admin-password`: the bootstrap administrator (ACL `#`), for the admin lists;
//   - `bench` / `bench-password`: an internal user whose only policy holds the ACL given as JSON in
//     argv[2] (a realistic ACL of a Wazo user, negations included);
//   - argv[3] more users in the master tenant, with varied names and an email address each.
import { eq, sql } from "drizzle-orm";
import { loadConfig } from "../src/config/config.ts";
import { openDatabase } from "../src/db/index.ts";
import { accesses, policies, policyAccesses, userPolicies } from "../src/db/schema.ts";
import { silentLogger } from "../src/observe/log.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { bootstrapUser } from "../src/services/identity/bootstrap.ts";

const acl = JSON.parse(process.argv[2] ?? "[]") as string[];
const extraUsers = Number(process.argv[3] ?? 0);
const config = loadConfig([]);
const app = await buildContext(
  config,
  await openDatabase({ url: config.db_uri, dataDir: config.data_dir }),
  silentLogger,
);
try {
  await bootstrapUser(app, "admin", "admin-password");
  const { userUuid } = await bootstrapUser(app, "bench", "bench-password");
  await app.db.delete(userPolicies).where(eq(userPolicies.userUuid, userUuid));
  const [policy] = await app.db
    .insert(policies)
    .values({ name: "bench", slug: "bench", tenantUuid: app.topTenantUuid })
    .returning();
  for (const access of acl) {
    const [row] = await app.db
      .insert(accesses)
      .values({ access })
      .onConflictDoUpdate({ target: accesses.access, set: { access } })
      .returning();
    await app.db.insert(policyAccesses).values({ policyUuid: policy!.uuid, accessId: row!.id });
  }
  await app.db.insert(userPolicies).values({ userUuid, policyUuid: policy!.uuid });
  if (extraUsers > 0) await seedUsers(extraUsers);
} finally {
  await closeContext(app);
}

/** Users `user<i>` with first names from a list and last names made of syllables (~2,500 distinct). */
async function seedUsers(n: number) {
  const first = sql.raw(
    `array['Alice','Bruno','Chloé','David','Emma','Farid','Gabriel','Hugo','Inès','Jules','Karim','Léa','Manon','Nathan','Olivia','Paul','Quentin','Rose','Samuel','Théo','Ulysse','Victor','Wassim','Xavier','Yasmine','Zoé']`,
  );
  const syl = sql.raw(
    `array['mar','tin','ber','nard','du','bois','lau','rent','si','mon','mi','chel','le','fe','vre','ro','bert','ri','chard','pe','tit','ga','ran','mo','rel']`,
  );
  const end = sql.raw(`array['eau','and','ier','ot','in','et','on','y','ez','ard']`);
  for (let from = 1; from <= n; from += 20_000) {
    const to = Math.min(n, from + 19_999);
    await app.db.execute(sql`
      with new_users as (
        insert into auth_user (uuid, username, firstname, lastname, tenant_uuid, purpose)
        select gen_random_uuid()::text, 'user' || i, (${first})[1 + (i * 7) % 26],
               initcap((${syl})[1 + (i * 13) % 25] || (${syl})[1 + (i / 25) % 25] || (${end})[1 + (i / 625) % 10]),
               ${app.topTenantUuid}, 'user'
        from generate_series(${from}::int, ${to}::int) i
        returning uuid, username)
      insert into auth_email (uuid, address, confirmed, main, user_uuid)
      select gen_random_uuid()::text, username || '@example.com', true, true, uuid from new_users`);
  }
  // What autovacuum would have done by the time such a database is in use: statistics, and the
  // trigram indexes' pending entries merged.
  await app.db.execute(sql`vacuum analyze`);
}
