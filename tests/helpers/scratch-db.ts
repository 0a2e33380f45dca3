// A new, empty database on the TEST_DATABASE_URL server, for tests that open it themselves (several
// instances on one database, an import target, the wazo-auth fixture); `drop` removes it.
import postgres from "postgres";

let counter = 0;

export async function scratchDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const base = process.env.TEST_DATABASE_URL!;
  const name = `${prefix}_${process.pid}_${Date.now()}_${counter++}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const dropper = postgres(base, { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await dropper.end();
      }
    },
  };
}
