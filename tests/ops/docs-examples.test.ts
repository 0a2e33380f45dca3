// The documentation's runnable examples are true: every fenced block marked `sh example` in the
// README and in docs/ runs, in order, under `bash -euo pipefail` against a started service
// bootstrapped as the quick start says (admin / choose-a-password), with its base URL put in place
// of http://127.0.0.1:9497. The blocks use `curl -f`, so any HTTP error fails the test, and `jq -e`
// where they show a result.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { waitForService } from "../helpers/service-process.ts";

const root = join(import.meta.dir, "../..");
const DOC_BASE = "http://127.0.0.1:9497";

export interface Example {
  file: string;
  line: number;
  code: string;
}

/** The `sh example` blocks of a Markdown text, with the line each starts on. */
export function examplesOf(file: string, markdown: string): Example[] {
  const found: Example[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^```sh\s+example\s*$/.test(lines[i]!)) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== "```") end++;
    found.push({ file, line: start + 1, code: lines.slice(start, end).join("\n") });
    i = end;
  }
  return found;
}

function markdownFiles(): string[] {
  const docs = join(root, "docs");
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".md") ? [join(dir, e.name)] : [],
    );
  return [join(root, "README.md"), ...(existsSync(docs) ? walk(docs) : [])];
}

const examples = markdownFiles().flatMap((f) => examplesOf(relative(root, f), readFileSync(f, "utf8")));

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

describe("documentation examples", () => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-docs-"));
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  let proc: ReturnType<typeof Bun.spawn> | null = null;

  beforeAll(async () => {
    const env = { ...process.env, TESSERA_DATA_DIR: join(dir, "data"), TESSERA_PORT: String(port) };
    const boot = Bun.spawn([process.execPath, "src/cli.ts", "bootstrap", "admin", "choose-a-password"], {
      cwd: root,
      env,
      stdout: "ignore",
      stderr: "pipe",
    });
    expect(await boot.exited).toBe(0);
    proc = Bun.spawn([process.execPath, "src/main.ts"], { cwd: root, env, stdout: "ignore", stderr: "pipe" });
    expect(await waitForService(`${base}/0.1`, 60)).toBe(true);
  }, 120_000);

  afterAll(async () => {
    proc?.kill("SIGTERM");
    await proc?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  test("the README has runnable examples, and the extractor finds a block", () => {
    expect(examples.length).toBeGreaterThan(0);
    expect(examplesOf("x.md", "text\n```sh example\necho hi\n```\n```sh\nnot me\n```")).toEqual([
      { file: "x.md", line: 3, code: "echo hi" },
    ]);
  });

  for (const ex of examples) {
    test(`${ex.file}:${ex.line} runs`, async () => {
      const script = ex.code.replaceAll(DOC_BASE, base);
      const r = Bun.spawn(["bash", "-euo", "pipefail", "-c", script], { cwd: dir, stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([
        new Response(r.stdout).text(),
        new Response(r.stderr).text(),
        r.exited,
      ]);
      if (code !== 0) console.error(`${ex.file}:${ex.line} failed:\n${out}\n${err}`);
      expect(code).toBe(0);
    });
  }
});
