// argon2id through the runtime's native implementation (DESIGN.md: runtime-specific code behind one
// small module). Bun.password runs the derivation on a worker thread, never on the event loop, and
// reads and writes the PHC string format (`$argon2id$v=19$m=…,t=…,p=1$salt$hash`).

export interface Argon2Params {
  memoryKib: number;
  timeCost: number;
}

interface NativePassword {
  hash(password: string, opts: { algorithm: "argon2id"; memoryCost: number; timeCost: number }): Promise<string>;
  verify(password: string, hash: string): Promise<boolean>;
}

function native(): NativePassword {
  const bun = (globalThis as { Bun?: { password?: NativePassword } }).Bun;
  if (!bun?.password) {
    throw new Error("argon2id needs the Bun runtime (Bun.password); run with bun, or set password_hash_algorithm: pbkdf2_sha512");
  }
  return bun.password;
}

export function argon2Hash(password: string, params: Argon2Params): Promise<string> {
  return native().hash(password, { algorithm: "argon2id", memoryCost: params.memoryKib, timeCost: params.timeCost });
}

export async function argon2Verify(password: string, phc: string): Promise<boolean> {
  try {
    return await native().verify(password, phc);
  } catch {
    return false; // a malformed stored hash never matches
  }
}

/** The parameters written in a PHC string, or null when it is not an argon2id hash. */
export function argon2ParamsOf(phc: string): Argon2Params | null {
  const m = /^\$argon2id\$v=\d+\$m=(\d+),t=(\d+),p=\d+\$/.exec(phc);
  return m ? { memoryKib: Number(m[1]), timeCost: Number(m[2]) } : null;
}
