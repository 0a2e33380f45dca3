// The token check with a browser's `Origin`: with CORS on (the default) the answer carries the CORS
// headers (the router's), with CORS off it is the same 204 without them, whichever path answers
// (src/http/fast-token-check.ts reads `Origin` only when CORS is on).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, databaseKinds, type TestApp } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";

const ORIGIN = "https://app.example.com";

for (const kind of databaseKinds()) {
  for (const enabled of [true, false]) {
    describe(`token check with Origin, CORS ${enabled ? "on" : "off"} [${kind}]`, () => {
      let t: TestApp;
      beforeAll(async () => {
        t = await createTestApp(kind, { config: { rest_api: { cors: { enabled } } } });
      }, 60_000);
      afterAll(() => t?.close());

      test("204 for a granted scope, 403 and 404 otherwise; CORS headers only when CORS is on", async () => {
        const { token } = await tokenFor(t.app, { acl: ["confd.users.me.read"] });
        const headers = { Origin: ORIGIN };
        const ok = await t.request("HEAD", `/0.1/token/${token}?scope=confd.users.me.read`, { headers });
        expect(ok.status).toBe(204);
        expect(ok.headers.get("Access-Control-Allow-Origin")).toBe(enabled ? ORIGIN : null);
        const denied = await t.request("HEAD", `/0.1/token/${token}?scope=confd.users.me.delete`, { headers });
        expect(denied.status).toBe(403);
        expect(denied.headers.get("Access-Control-Allow-Origin")).toBe(enabled ? ORIGIN : null);
        const unknown = await t.request("HEAD", `/0.1/token/${crypto.randomUUID()}`, { headers });
        expect(unknown.status).toBe(404);
        // Not the shortcut's shape (capitals): never a cache hit there; the route answers it as it does.
        const upper = await t.request("HEAD", `/0.1/token/${token.toUpperCase()}?scope=confd.users.me.read`, {
          headers,
        });
        expect(upper.status).toBe(204);
        expect(upper.headers.get("Access-Control-Allow-Origin")).toBe(enabled ? ORIGIN : null);
      });
    });
  }
}
