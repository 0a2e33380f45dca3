// argon2id derivations, run on the password-hashing threads (hash-pool.ts), never on the event
// loop. Hashes are PHC strings (`$argon2id$v=19$m=…,t=…,p=1$salt$hash`).
import { hashPool, type HashPoolSizes } from "./hash-pool.ts";

export interface Argon2Params {
  memoryKib: number;
  timeCost: number;
}

export async function argon2Hash(password: string, params: Argon2Params, sizes: HashPoolSizes): Promise<string> {
  return (await hashPool(sizes).run({
    op: "argon2_hash",
    password,
    memoryKib: params.memoryKib,
    timeCost: params.timeCost,
  })) as string;
}

/** True when `password` matches; a malformed stored hash never matches. */
export async function argon2Verify(password: string, phc: string, sizes: HashPoolSizes): Promise<boolean> {
  return (await hashPool(sizes).run({ op: "argon2_verify", password, phc })) === true;
}

/** The parameters written in a PHC string, or null when it is not an argon2id hash. */
export function argon2ParamsOf(phc: string): Argon2Params | null {
  const m = /^\$argon2id\$v=\d+\$m=(\d+),t=(\d+),p=\d+\$/.exec(phc);
  return m ? { memoryKib: Number(m[1]), timeCost: Number(m[2]) } : null;
}
