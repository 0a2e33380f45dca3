// The embedded database's lock: held only while the very process that took it runs. After a crash,
// a pid reused by another process (the rule in containers) does not keep the data directory locked.
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { lockDataDir, processStartTime } from "../../src/db/pid-lock.ts";
import { tempDirs } from "../helpers/temp-dirs.ts";

const tempDir = tempDirs("tessera-lock-");

const bootId = () => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
const hasProc = processStartTime(process.pid) !== null;

test.skipIf(!hasProc)(
  "a lock left by a crashed process whose pid now belongs to another process is taken over",
  async () => {
    const other = Bun.spawn(["sleep", "30"]);
    try {
      const dir = tempDir();
      // The crashed holder had this pid, but it started at another time.
      writeFileSync(join(dir, "tessera.pid"), JSON.stringify({ pid: other.pid, started: "1", boot: bootId() }));
      const lock = lockDataDir(dir);
      expect(JSON.parse(readFileSync(join(dir, "tessera.pid"), "utf8")).pid).toBe(process.pid);
      lock.release();
    } finally {
      other.kill();
    }
  },
);

test.skipIf(!hasProc)("a lock held by a live process (same pid, same start time) is refused, naming it", async () => {
  const holder = Bun.spawn(["sleep", "30"]);
  try {
    const dir = tempDir();
    writeFileSync(
      join(dir, "tessera.pid"),
      JSON.stringify({ pid: holder.pid, started: processStartTime(holder.pid), boot: bootId() }),
    );
    expect(() => lockDataDir(dir)).toThrow(`in use by process ${holder.pid}`);
  } finally {
    holder.kill();
  }
});

test("a lock from another boot, or of a dead process, is stale and taken over", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "tessera.pid"), JSON.stringify({ pid: 1, started: "1", boot: "another-boot" }));
  const lock = lockDataDir(dir);
  lock.release();
  writeFileSync(join(dir, "tessera.pid"), "999999999"); // the old format: a dead pid
  const again = lockDataDir(dir);
  again.release();
  expect(() => readFileSync(join(dir, "tessera.pid"))).toThrow();
});
