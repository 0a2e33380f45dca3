// A rolling upgrade on one PostgreSQL: the previous version — the commit just before the newest
// migration of drizzle/, exported with `git archive` into a temporary directory (no worktree is
// registered in the repository) and run with this checkout's node_modules — starts on an empty
// database, then the current code starts beside it and applies the newest migrations (expand). Both
// must then serve: logins, token checks of each other's tokens, admin writes each other reads, and
// revocations each other honours. A migration that breaks the previous version (a contract step
// shipped too early: a dropped or renamed column it still reads) fails here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scratchDatabase } from "../helpers/scratch-db.ts";
import { adminLogin, InstanceFleet, ROOT, type Instance } from "../helpers/tessera-instances.ts";

const base = process.env.TEST_DATABASE_URL;

/** The commit just before the newest change of drizzle/, or why it cannot be had. */
function previousVersion(): { commit: string; subject: string } | { skip: string } {
  const git = (...args: string[]) => Bun.spawnSync(["git", "-C", ROOT, ...args]);
  const newest = git("log", "-1", "--format=%H", "--", "drizzle").stdout.toString().trim();
  if (!newest) return { skip: "no git history of drizzle/ in this checkout" };
  const parent = git("rev-parse", "--verify", "-q", `${newest}^`);
  if (parent.exitCode !== 0) return { skip: `the commit before ${newest.slice(0, 8)} is not in this clone (shallow?)` };
  const commit = parent.stdout.toString().trim();
  return { commit, subject: git("log", "-1", "--format=%h %s", commit).stdout.toString().trim().slice(0, 80) };
}

const previous = base ? previousVersion() : { skip: "TEST_DATABASE_URL is not set" };
if ("skip" in previous) console.warn(`rolling upgrade test skipped: ${previous.skip}`);

describe.skipIf("skip" in previous)("rolling upgrade: the previous version and this one on one database", () => {
  const fleet = new InstanceFleet();
  const oldRoot = mkdtempSync(join(tmpdir(), "tessera-previous-"));
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let old: Instance;
  let current: Instance;

  beforeAll(async () => {
    const { commit } = previous as { commit: string };
    const archive = Bun.spawnSync(["sh", "-c", `git -C "${ROOT}" archive "${commit}" | tar -x -C "${oldRoot}"`]);
    if (archive.exitCode !== 0) throw new Error(`git archive ${commit}: ${archive.stderr.toString()}`);
    // The previous version's dependencies are a subset of this one's (checked by it running at all).
    symlinkSync(join(ROOT, "node_modules"), join(oldRoot, "node_modules"));
    scratch = await scratchDatabase("tessera_upgrade");
    fleet.bootstrap({ dbUri: scratch.url, root: oldRoot });
    old = await fleet.start("previous", { dbUri: scratch.url, root: oldRoot, probe: "status" });
    current = await fleet.start("current", { dbUri: scratch.url });
  }, 120_000);

  afterAll(async () => {
    await fleet.stopAll();
    await scratch?.drop();
    rmSync(oldRoot, { recursive: true, force: true });
  }, 60_000);

  test("both versions log in, check each other's tokens, read each other's writes, honour each other's revocations", async () => {
    console.log(`previous version: ${(previous as { subject: string }).subject}`);
    const tokens = { old: await adminLogin(old.url), current: await adminLogin(current.url) };
    for (const t of Object.values(tokens))
      for (const i of [old, current])
        expect((await fetch(`${i.url}/token/${t}?scope=auth.users.read`, { method: "HEAD" })).status).toBe(204);

    // Admin writes on each version, read back by the other.
    const created: Record<string, string> = {};
    for (const [name, i] of [
      ["old", old],
      ["current", current],
    ] as const) {
      const res = await fetch(`${i.url}/users`, {
        method: "POST",
        headers: { "X-Auth-Token": tokens[name], "Content-Type": "application/json" },
        body: JSON.stringify({
          username: `made-by-${name}`,
          password: "pw-12345678",
          email_address: `${name}@example.com`,
        }),
      });
      expect(res.status).toBe(200);
      created[name] = ((await res.json()) as { uuid: string }).uuid;
    }
    for (const [reader, i] of [
      ["old", old],
      ["current", current],
    ] as const) {
      for (const uuid of Object.values(created)) {
        const res = await fetch(`${i.url}/users/${uuid}`, { headers: { "X-Auth-Token": tokens[reader] } });
        expect(res.status).toBe(200);
      }
      const listed = await fetch(`${i.url}/users?search=made-by`, { headers: { "X-Auth-Token": tokens[reader] } });
      expect(((await listed.json()) as { filtered: number }).filtered).toBe(2);
      const tenant = await fetch(`${i.url}/tenants`, {
        method: "POST",
        headers: { "X-Auth-Token": tokens[reader], "Content-Type": "application/json" },
        body: JSON.stringify({ name: `tenant-by-${reader}` }),
      });
      expect(tenant.status).toBe(200);
    }
    // A user created by one version logs in on the other.
    for (const [maker, i] of [
      ["old", current],
      ["current", old],
    ] as const) {
      const login = await fetch(`${i.url}/token`, {
        method: "POST",
        headers: { Authorization: `Basic ${btoa(`made-by-${maker}:pw-12345678`)}`, "Content-Type": "application/json" },
        body: "{}",
      });
      expect(login.status).toBe(200);
    }
    // Revoked on one version, refused by the other.
    for (const [revoker, checker] of [
      [old, current],
      [current, old],
    ] as const) {
      const t = await adminLogin(revoker.url);
      expect((await fetch(`${checker.url}/token/${t}`, { method: "HEAD" })).status).toBe(204);
      expect((await fetch(`${revoker.url}/token/${t}`, { method: "DELETE" })).status).toBe(200);
      let seen = 204;
      for (let n = 0; n < 50 && seen === 204; n++, await Bun.sleep(10))
        seen = (await fetch(`${checker.url}/token/${t}`, { method: "HEAD" })).status;
      expect(seen).toBe(404);
    }
    // Both are still up (no crash on a schema newer than the previous version knows).
    expect(old.proc.exitCode).toBeNull();
    expect((await fetch(`${current.url}/ready`)).status).toBe(200);
  }, 60_000);

  test("the previous version restarts on the newer schema (an instance restarted mid-upgrade) and serves", async () => {
    old.kill("SIGTERM");
    expect(await old.proc.exited).toBe(0);
    old = await fleet.start("previous-again", { dbUri: scratch.url, root: oldRoot, probe: "status" });
    const token = await adminLogin(old.url);
    expect((await fetch(`${current.url}/token/${token}`, { method: "HEAD" })).status).toBe(204);
    expect((await fetch(`${old.url}/users?search=made-by`, { headers: { "X-Auth-Token": token } })).status).toBe(200);
  }, 60_000);
});
