// A SIGTERM to the process the operator started stops the service, whatever started it: npm
// (`npm start`), npx (`npx tessera serve`: npm → sh → the Node launcher → Bun), the launcher itself
// (bin/tessera.js), and the command a systemd unit or the single executable runs (`tessera serve`
// in-process). Only the started pid is signalled (no process group); the port must be released and
// the data directory's lock file removed within a bound, and no process of the tree left running.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childPids, freePort, running, waitForService } from "../helpers/service-process.ts";

const root = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "tessera-signals-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every descendant of `pid` now (Linux /proc). */
function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const child of childPids(pid)) out.push(child, ...descendants(child));
  return out;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });

async function waitFor(condition: () => Promise<boolean> | boolean, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; ) {
    if (await condition()) return true;
    await Bun.sleep(50);
  }
  return condition();
}

const ways: Record<string, string[]> = {
  "npm start": ["npm", "start", "--silent"],
  "npx tessera serve": ["npx", "--no-install", "tessera", "serve"],
  "node bin/tessera.js serve": ["node", "bin/tessera.js", "serve"],
  "tessera serve in-process (systemd's ExecStart, the single executable)": [process.execPath, "src/cli.ts", "serve"],
};

for (const [way, command] of Object.entries(ways)) {
  test(`${way}: SIGTERM to the started pid stops the service, frees its port and its data directory`, async () => {
    const port = freePort();
    const dataDir = join(dir, `data-${port}`);
    const proc = Bun.spawn(command, {
      cwd: root,
      env: {
        ...process.env,
        TESSERA_CONFIG: "",
        DATABASE_URL: "",
        TESSERA_PORT: String(port),
        TESSERA_DATA_DIR: dataDir,
      },
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    });
    let tree: number[] = [];
    try {
      expect(await waitForService(`http://127.0.0.1:${port}/0.1`, 60)).toBe(true);
      expect(existsSync(join(dataDir, "tessera.pid"))).toBe(true);
      tree = descendants(proc.pid);
      process.kill(proc.pid, "SIGTERM");
      expect(await waitFor(async () => !(await listening(port)), 20_000)).toBe(true);
      expect(await waitFor(() => !existsSync(join(dataDir, "tessera.pid")), 20_000)).toBe(true);
      expect(await waitFor(() => tree.every((pid) => !running(pid)), 20_000)).toBe(true);
      expect(await Promise.race([proc.exited.then(() => true), Bun.sleep(20_000).then(() => false)])).toBe(true);
    } finally {
      for (const pid of [proc.pid, ...tree]) if (running(pid)) process.kill(pid, "SIGKILL");
    }
  }, 120_000);
}
