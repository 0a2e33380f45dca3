// An in-memory copy of the tenant tree (uuid → parent) for the token check's `tenant=` test, so
// the hot path does no I/O. Any change to auth_tenant is announced by a trigger (NOTIFY
// tessera_tenants_changed, on commit) with what changed (drizzle/0010): each instance applies it to
// its copy, instead of reloading 100,000 rows per change; a bulk change ("*") or an unknown payload
// drops the copy, reloaded on next use. The writing instance also applies its own creations after
// its commit (a token check right after must know the new tenant), and its moves and deletions too
// when no notice came in between (else it drops the copy, reloaded on next use). A change heard while a load is under
// way may be missing from what the load read: that load is not kept. While notifications may be
// missed (LISTEN connection lost), the copy is not used: checks read the database, and the copy is
// reloaded once hearing resumes.
import { tenants } from "../../db/schema.ts";
import type { DbOrTx } from "../../db/index.ts";
import { ancestorUuids, tenantExists } from "./tenant-tree.ts";

/** Changes remembered as heard; a transaction outlasting more notices drops the copy instead. */
const RECENT_NOTICES = 10_000;

export interface TreeMark {
  heard: number;
}

export class TenantTreeCache {
  private parents: Map<string, string> | null = null;
  private version = 0;
  private loading: Promise<Map<string, string>> | null = null;
  private trusted = true;
  private loadCount = 0;
  /** Notices heard so far, and when each recent change was last heard (see `changed`). */
  private heard = 0;
  private recent = new Map<string, number>();
  private lastUnreadable = -1;

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
    this.heard++;
    const changes = payload.split(";");
    const valid = (c: string) => /^\+[^ ;]+ [^ ;]+$/.test(c) || /^-[^ ;]+$/.test(c);
    for (const [change, at] of this.recent) {
      if (at >= this.heard - RECENT_NOTICES) break;
      this.recent.delete(change);
    }
    const readable = payload !== "" && changes.every(valid);
    if (!readable)
      this.lastUnreadable = this.heard; // a bulk change ("*"): which tenants, unknown
    else
      for (const c of changes) {
        this.recent.delete(c); // re-inserted: most recent last
        this.recent.set(c, this.heard);
      }
    if (!readable || this.loading) {
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

  /** Taken before this instance changes the tree in a transaction (see `changed`). */
  mark(): TreeMark {
    return { heard: this.heard };
  }

  /**
   * This instance's own move (`parent`) or deletion (`null`) of `uuid`, once committed, applied to
   * the copy instead of dropping it (a reload reads every tenant: 100,000 rows stall the token
   * checks that wait for it). Notices come in commit order: once this change's own notice is heard
   * the copy holds it, and any later notice too, so it is applied only while its notice is not yet
   * heard (PostgreSQL may deliver it before or after the commit returns). A notice of an earlier
   * change heard after this one is applied is put right by this change's own, which follows it. A
   * bulk change heard since `mark` may be later and touch this tenant: the copy is dropped then.
   */
  changed(uuid: string, parent: string | null, mark: TreeMark): void {
    if (this.loading || this.lastUnreadable > mark.heard || this.heard - mark.heard > RECENT_NOTICES) {
      this.invalidate();
      return;
    }
    if ((this.recent.get(parent === null ? `-${uuid}` : `+${uuid} ${parent}`) ?? -1) > mark.heard) return;
    if (parent === null) this.parents?.delete(uuid);
    else this.parents?.set(uuid, parent);
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

  /** is_subtenant(child, parent) of wazo-auth's tenant tree, from memory once loaded. */
  async isSubtenant(db: DbOrTx, child: string, parent: string): Promise<boolean> {
    if (!this.trusted) {
      if (child === parent) return tenantExists(db, child);
      return (await ancestorUuids(db, child)).includes(parent);
    }
    return walkUp(await this.tree(db), child, parent);
  }

  /**
   * Every tenant's parent (the master tenant its own), from memory once loaded; read afresh while
   * notices may be missed. For walks up the tree that are not the token check's.
   */
  parentMap(db: DbOrTx): Promise<ReadonlyMap<string, string>> {
    return this.tree(db);
  }

  /** The same map without waiting: undefined while it is not in memory or not trusted. */
  parentMapNow(): ReadonlyMap<string, string> | undefined {
    return this.trusted && this.parents ? this.parents : undefined;
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
