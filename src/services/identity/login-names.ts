// One login namespace, compared as PRECIS UsernameCaseMapped does (RFC 8265 §3.3): width-mapped
// and normalised with NFKC (§3.3.1's width mapping, taken further: NFKC rather than the profile's
// NFC, so ligatures and other compatibility forms fold too), then lower-cased (§3.3.2, Unicode
// toLowerCase). `ＡＤＭＩＮ` (full width), `ADMIN` and `admin` are one login. The same SQL expression
// is applied to the stored name and to the typed login, so the application and the database can
// never disagree; an index covers the stored side (auth_user_username_key_idx).
import { sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { execRows, type DbOrTx } from "../../db/index.ts";

/** The comparison key of a stored column (username or email address). */
export const storedLoginKey = (column: SQLWrapper): SQL => sql`lower(normalize(${column}, NFKC))`;

/** The comparison key of a login as typed. */
export const typedLoginKey = (login: string): SQL => sql`lower(normalize(${login}::text, NFKC))`;

/**
 * Creations and renames in the login namespace, one at a time per login: the key has no unique
 * index (rows that collided before it existed must not stop the migration, see
 * `findLoginCollisions`), so the check-then-write of one transaction must not interleave with
 * another's on the same key. The lock is the key's (hashed; a collision of hashes only makes two
 * logins wait for each other), held to the commit: creations of different logins run side by side
 * (one namespace-wide lock made provisioning a directory one user at a time). All the logins of a
 * write are locked in one statement in hash order, so two writes never wait on each other in a cycle.
 */
export async function lockLogins(tx: DbOrTx, logins: string[]): Promise<void> {
  if (logins.length === 0) return;
  await execRows(
    tx,
    sql`select pg_advisory_xact_lock(2202205, h) from (
          select distinct hashtext(lower(normalize(k, NFKC))) as h from unnest(array[${sql.join(
            logins.map((l) => sql`${l}::text`),
            sql`, `,
          )}]) as k
          order by h) as keys`,
  );
}

export interface LoginCollision {
  key: string;
  logins: Array<{ user_uuid: string; tenant_uuid: string; login: string; kind: "username" | "email" }>;
}

/**
 * Logins of different users that compare equal: rows written before the comparison was this strict
 * (or imported). Reported, never changed: which account keeps the name is the operator's decision.
 */
export async function findLoginCollisions(db: DbOrTx): Promise<LoginCollision[]> {
  const rows = await execRows<{ key: string; logins: string | LoginCollision["logins"] }>(
    db,
    sql`select key, json_agg(json_build_object('user_uuid', user_uuid, 'tenant_uuid', tenant_uuid, 'login', login, 'kind', kind) order by login, user_uuid)::text as logins
          from (select u.uuid as user_uuid, u.tenant_uuid, u.username as login, 'username' as kind, ${storedLoginKey(sql`u.username`)} as key
                  from auth_user u where u.username is not null
                union all
                select u.uuid, u.tenant_uuid, e.address, 'email', ${storedLoginKey(sql`e.address`)}
                  from auth_email e join auth_user u on u.uuid = e.user_uuid) logins
         group by key having count(distinct user_uuid) > 1
         order by key`,
  );
  return rows.map((r) => ({ key: r.key, logins: typeof r.logins === "string" ? JSON.parse(r.logins) : r.logins }));
}
