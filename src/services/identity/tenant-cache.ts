// An in-memory copy of the tenant tree (uuid → parent) for the token check's `tenant=` test, so
// the hot path does no I/O. Any change to auth_tenant is announced by a trigger (NOTIFY
// tessera_tenants_changed, on commit) with what changed (drizzle/0010): each instance applies it to
// its copy, instead of reloading 100,000 rows per change; a bulk change ("*") or an unknown payload
// drops the copy, reloaded on next use. The writing instance also applies its own creations after
// its commit (a token check right after must know the new tenant) and drops the copy after its moves
// and deletions (rare; the notice then reloads nothing twice). A change heard while a load is under
// way may be missing from what the load read: that load is not kept. While notifications may be
// missed (LISTEN connection lost), the copy is not used: checks read the database, and the copy is
// reloaded once hearing resumes.
import { tenants } from "../../db/schema.ts";
import type { DbOrTx } from "../../db/index.ts";
import { ancestorUuids, tenantExists } from "./tenant-tree.ts";

export class TenantTreeCache {
  private parents: Map<string, string> | null = null;
  private version = 0;
  private loading: Promise<Map<string, string>> | null = null;
  private trusted = true;
  private loadCount = 0;

  suspend(): void {
    this.trusted = false;
    this.invalidate();
  }

  resume(): void {
    this.invalidate();
    this.trusted = true;
  }

  invalidate(): void {
    this.version++;
    this.parents = null;
    this.loading = null;
  }

  /** Tenants inserted or moved ("+uuid parent") and deleted ("-uuid"), as the trigger announces them. */
  applyNotice(payload: string): void {
    const changes = payload.split(";");
    const valid = (c: string) => /^\+[^ ;]+ [^ ;]+$/.test(c) || /^-[^ ;]+$/.test(c);
    if (payload === "" || !changes.every(valid) || this.loading) {
      this.invalidate();
      return;
    }
    for (const c of changes) {
      if (c.startsWith("+")) {
        const [uuid, parent] = c.slice(1).split(" ") as [string, string];
        this.parents?.set(uuid, parent);
      } else this.parents?.delete(c.slice(1));
    }
  }

  /** A tenant this instance created, once committed (a move of it already heard is kept). */
  created(uuid: string, parent: string): void {
    if (this.loading) {
      this.invalidate();
      return;
    }
    if (this.parents && !this.parents.has(uuid)) this.parents.set(uuid, parent);
  }

  /** Reads of the whole tree so far (tests, diagnostics). */
  get loads(): number {
    return this.loadCount;
  }

  private async tree(db: DbOrTx): Promise<Map<string, string>> {
    if (this.parents) return this.parents;
    if (!this.loading) {
      const version = this.version;
      this.loadCount++;
      this.loading = db
        .select({ uuid: tenants.uuid, parent: tenants.parentUuid })
        .from(tenants)
        .then((rows) => {
          const map = new Map(rows.map((r) => [r.uuid, r.parent]));
          if (version === this.version && this.trusted) this.parents = map;
          return map;
        })
        .finally(() => {
          this.loading = null;
        });
    }
    return this.loading;
  }

  /** is_subtenant(child, parent) of COMPATIBILITY.md §9.1, from memory once loaded. */
  async isSubtenant(db: DbOrTx, child: string, parent: string): Promise<boolean> {
    if (!this.trusted) {
      if (child === parent) return tenantExists(db, child);
      return (await ancestorUuids(db, child)).includes(parent);
    }
    return walkUp(await this.tree(db), child, parent);
  }

  /** The same answer without waiting: undefined while the tree is not in memory (fast paths). */
  isSubtenantNow(child: string, parent: string): boolean | undefined {
    return this.trusted && this.parents ? walkUp(this.parents, child, parent) : undefined;
  }
}

function walkUp(tree: Map<string, string>, child: string, parent: string): boolean {
  if (!tree.has(child)) return false;
  for (let current = child, hops = 0; hops <= tree.size; hops++) {
    if (current === parent) return true;
    const up = tree.get(current);
    if (up === undefined || up === current) return false; // reached the master tenant
    current = up;
  }
  return false;
}
