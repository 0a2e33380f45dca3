// The access log switch (`access_log`), the batched log writer with reopen on rotation, and the
// token check's in-memory shortcut (it answers only what the full route would answer).
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fastTokenCheck } from "../../src/http/fast-token-check.ts";
import { createLogger, LogWriter, type Logger } from "../../src/observe/log.ts";
import { revokeToken } from "../../src/services/auth/sessions.ts";
import { describeEachDb, peerAt } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

const lines: string[] = [];
const log: Logger = createLogger("info", (l) => lines.push(l));
const requestLines = () => lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");

describeEachDb(
  "access log and token-check shortcut",
  (get) => {
    test("access_log off: successful requests are not logged, failures are, tokens masked", async () => {
      const t = get();
      t.app.config.access_log = false;
      lines.length = 0;
      const { token } = await tokenFor(t.app, { acl: ["a.b"] });
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=a.b`)).status).toBe(204);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=a.b`)).status).toBe(204);
      expect((await t.request("GET", `/0.1/token/${token}`)).status).toBe(200);
      expect(requestLines()).toEqual([]);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=x.y`)).status).toBe(403);
      expect((await t.request("GET", "/0.1/users", { token })).status).toBe(403);
      const logged = requestLines();
      expect(logged.map((l) => [l.method, l.status])).toEqual([
        ["HEAD", 403],
        ["GET", 403],
      ]);
      expect(logged[0].path).toBe(`/0.1/token/${token.slice(0, 4)}…`);
      expect(lines.join("\n")).not.toContain(token);
    });

    test("access_log on: every request is logged, the shortcut's answers included", async () => {
      const t = get();
      t.app.config.access_log = true;
      try {
        lines.length = 0;
        const { token } = await tokenFor(t.app, { acl: ["a.b"] });
        for (let i = 0; i < 3; i++)
          expect(
            (await t.request("HEAD", `/0.1/token/${token}?scope=a.b`, { remoteAddr: "198.51.100.7" })).status,
          ).toBe(204);
        const logged = requestLines();
        expect(logged.length).toBe(3);
        for (const l of logged) {
          expect(l).toMatchObject({
            level: "info",
            method: "HEAD",
            path: `/0.1/token/${token.slice(0, 4)}…`,
            status: 204,
            remote_addr: "198.51.100.7",
          });
          expect(typeof l.duration_ms).toBe("number");
        }
        expect(lines.join("\n")).not.toContain(token);
      } finally {
        t.app.config.access_log = false;
      }
    });

    test("the shortcut answers a cached, granted check and leaves everything else to the route", async () => {
      const t = get();
      const tenant = await createTenantRow(t.app);
      const other = await createTenantRow(t.app);
      const { token } = await tokenFor(t.app, { acl: ["a.b", "!a.c"], tenantUuid: tenant });
      const ROUTE = 599; // what the stand-in router answers: "left to the route"
      const fast = async (path: string, headers: Record<string, string> = {}, method = "HEAD") =>
        (
          await fastTokenCheck(
            t.app,
            new Request(`http://localhost${path}`, { method, headers }),
            peerAt("127.0.0.1"),
            () => new Response(null, { status: ROUTE }),
          )
        ).status;
      t.app.tokenCache.clear();
      expect(await fast(`/0.1/token/${token}?scope=a.b`)).toBe(ROUTE); // not cached: read, then the route answers
      expect(await fast(`/0.1/token/${token}?scope=a.b`)).toBe(204); // the read cached it
      expect(await fast(`/0.1/token/${token}`)).toBe(204);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=a.b&tenant=${tenant}`)).status).toBe(204);
      expect(await fast(`/0.1/token/${token}?scope=a.b&tenant=${tenant}`)).toBe(204);
      // refusals, unusual queries, CORS and other methods go to the route
      expect(await fast(`/0.1/token/${token}?scope=a.c`)).toBe(ROUTE);
      expect(await fast(`/0.1/token/${token}?scope=a.b&tenant=${other}`)).toBe(ROUTE);
      expect(await fast(`/0.1/token/${token}?scope=a.b&scope=a.c`)).toBe(ROUTE);
      expect(await fast(`/0.1/token/${token}?scope=a%2Eb`)).toBe(ROUTE);
      expect(await fast(`/0.1/token/${token}/`)).toBe(ROUTE);
      expect(await fast(`/0.1/token/${token}?scope=a.b`, { Origin: "https://app.example.com" })).toBe(ROUTE);
      expect(await fast(`/0.1/token/${token}`, {}, "GET")).toBe(ROUTE);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=a.b&tenant=${other}`)).status).toBe(403);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=a.b&scope=a.c`)).status).toBe(400);
      // a made-up token is a bare 404 (as the route answers HEAD) unless the query would be a 400
      const madeUp = crypto.randomUUID();
      expect(await fast(`/0.1/token/${madeUp}?scope=a.b`)).toBe(404);
      expect(await fast(`/0.1/token/${madeUp}?scope=${"a".repeat(5000)}`)).toBe(ROUTE);
      expect((await t.request("HEAD", `/0.1/token/${madeUp}?scope=${"a".repeat(5000)}`)).status).toBe(400);
      const viaRoute = await t.http.fetch(
        new Request(`http://localhost/0.1/token/${crypto.randomUUID()}?scope=a.b&tenant=${tenant}`, { method: "HEAD" }),
        { remoteAddr: "" },
      );
      const viaShortcut = await fastTokenCheck(
        t.app,
        new Request(`http://localhost/0.1/token/${madeUp}?scope=a.b&tenant=${tenant}`, { method: "HEAD" }),
        peerAt(""),
        () => new Response(null, { status: ROUTE }),
      );
      expect([viaShortcut.status, viaShortcut.headers.get("content-type"), await viaShortcut.text()]).toEqual([
        viaRoute.status,
        viaRoute.headers.get("content-type"),
        await viaRoute.text(),
      ]);
      // a revoked token is no longer answered from memory: 404
      await revokeToken(t.app, token);
      expect(await fast(`/0.1/token/${token}?scope=a.b`)).toBe(404);
      expect((await t.request("HEAD", `/0.1/token/${token}?scope=a.b`)).status).toBe(404);
    });
  },
  { log },
);

test("the log writer batches lines and reopens its file after rotation", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-log-"));
  try {
    const path = join(dir, "tessera.log");
    const writer = new LogWriter(path);
    const logger = createLogger("info", writer.sink);
    logger.info("one", { password: "s3cret" });
    logger.debug("hidden");
    expect(readFileSync(path, "utf8")).toBe(""); // not yet: written after this turn of the event loop
    await new Promise((r) => setImmediate(r));
    renameSync(path, `${path}.1`); // logrotate moves the file…
    logger.info("two");
    writer.reopen(); // …and sends SIGHUP
    logger.info("three");
    writer.close();
    const rotated = readFileSync(`${path}.1`, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const current = readFileSync(path, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rotated.map((l) => l.msg)).toEqual(["one", "two"]);
    expect(rotated[0].password).toBe("********");
    expect(current.map((l) => l.msg)).toEqual(["three"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
