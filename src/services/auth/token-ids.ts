// Every token id the embedded database holds (PGlite only). The embedded database belongs to one
// process (the data directory's lock), so each token row was either there when this process started
// or inserted by it: an id missing from this set is unknown without asking the database. A flood of
// made-up tokens then costs a hash lookup per request instead of a query on the embedded engine's
// thread, whose one connection logins and administration share. The set may hold more than the
// table — an insert rolled back, a token expired and not yet purged — and those ids are simply
// looked up, as they would be without it; it never holds less. PostgreSQL is shared by other instances inserting tokens, hence no set.
// The set belongs to the open database, not to an AppContext: contexts built over one embedded
// database (as tests build "instances") share it, since each one's inserts are the others' tokens.
import { tokens } from "../../db/schema.ts";
import type { Database, Db } from "../../db/index.ts";

const byDatabase = new WeakMap<Database, Promise<EmbeddedTokenIds>>();

export class EmbeddedTokenIds {
  private readonly ids: Set<string>;

  private constructor(ids: Iterable<string>) {
    this.ids = new Set(ids);
  }

  /** The set of an embedded database, read once (every id in the table) before anything is answered. */
  static of(database: Database): Promise<EmbeddedTokenIds> {
    let ids = byDatabase.get(database);
    if (!ids) byDatabase.set(database, (ids = EmbeddedTokenIds.load(database.db)));
    return ids;
  }

  private static async load(db: Db): Promise<EmbeddedTokenIds> {
    const rows = await db.select({ uuid: tokens.uuid }).from(tokens);
    return new EmbeddedTokenIds(rows.map((r) => r.uuid));
  }

  /** False only when no row can have this id. */
  mayExist(uuid: string): boolean {
    return this.ids.has(uuid);
  }

  /** A row with this id was inserted (call before its id is revealed to anyone, i.e. before commit). */
  add(uuid: string): void {
    this.ids.add(uuid);
  }

  /** The row's deletion committed. */
  delete(uuid: string): void {
    this.ids.delete(uuid);
  }
}
