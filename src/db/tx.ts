// One transaction per write request, with hooks that run only once it has committed (cache
// evictions must not happen before the deletion is visible to other readers).
import type { AppContext } from "../boot/context.ts";
import type { DbOrTx, Tx } from "./types.ts";

const hooks = new WeakMap<object, Array<() => void>>();

export async function inTransaction<T>(app: AppContext, fn: (tx: Tx) => Promise<T>): Promise<T> {
  let pending: Array<() => void> = [];
  const result = await app.db.transaction(async (tx) => {
    pending = [];
    hooks.set(tx, pending);
    return fn(tx as Tx);
  });
  for (const hook of pending) hook();
  return result;
}

/** Runs `fn` after the transaction commits; immediately when `db` is not a transaction. */
export function afterCommit(db: DbOrTx, fn: () => void): void {
  const list = hooks.get(db);
  if (list) list.push(fn);
  else fn();
}
