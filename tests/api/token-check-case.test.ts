// A token written in capitals is the same token (wazo-auth compares tokens as PostgreSQL `uuid`; RFC
// 9562 §4): the router's `/0.1/token/{token}` routes and the check's shortcut before the router
// (http/fast-token-check.ts) answer it as they answer the lower-case form, for HEAD, GET and DELETE.
import { expect, test } from "bun:test";
import { fastTokenCheck } from "../../src/http/fast-token-check.ts";
import { canonicalTokenId } from "../../src/services/auth/tokens.ts";
import { describeEachDb, peerAt, type TestApp } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";

/** What the stand-in router answers: "left to the route". */
const ROUTE = 599;

/** The shortcut alone: its own answer, or ROUTE when it hands the request on. */
async function viaShortcut(t: TestApp, path: string): Promise<number> {
  const req = new Request(`http://localhost${path}`, { method: "HEAD" });
  return (await fastTokenCheck(t.app, req, peerAt("127.0.0.1"), () => new Response(null, { status: ROUTE }))).status;
}

/** The router alone (no shortcut before it). */
async function viaRouter(t: TestApp, method: string, path: string) {
  const res = await t.http.fetch(new Request(`http://localhost${path}`, { method }), { remoteAddr: "127.0.0.1" });
  return { status: res.status, text: await res.text() };
}

/** Capitals on every other hex letter: a mixed-case form. */
const mixedCase = (s: string) => [...s].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join("");

test("canonicalTokenId lower-cases hex capitals and returns a lower-case id itself", () => {
  const id = crypto.randomUUID();
  expect(canonicalTokenId(id)).toBe(id);
  expect(canonicalTokenId(id.toUpperCase())).toBe(id);
  expect(canonicalTokenId(mixedCase(id))).toBe(id);
  expect(canonicalTokenId("eyJ")).toBe("eyJ");
});

describeEachDb("token check of an upper-case token", (get) => {
  test("HEAD: the shortcut answers it as the route does (204, 403 to the route, 404)", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["a.b"] });
    for (const form of [token.toUpperCase(), mixedCase(token)]) {
      t.app.tokenCache.clear();
      // Not cached: one read, then the route (as for the lower-case form); cached afterwards.
      expect(await viaShortcut(t, `/0.1/token/${form}?scope=a.b`)).toBe(ROUTE);
      expect(await viaShortcut(t, `/0.1/token/${form}?scope=a.b`)).toBe(204);
      expect(await viaShortcut(t, `/0.1/token/${form}`)).toBe(204);
      expect((await viaRouter(t, "HEAD", `/0.1/token/${form}?scope=a.b`)).status).toBe(204);
      expect(await viaShortcut(t, `/0.1/token/${form}?scope=a.c`)).toBe(ROUTE);
      expect((await viaRouter(t, "HEAD", `/0.1/token/${form}?scope=a.c`)).status).toBe(403);
      expect((await t.request("HEAD", `/0.1/token/${form}?scope=a.c`)).status).toBe(403);
    }
    const madeUp = crypto.randomUUID().toUpperCase();
    expect(await viaShortcut(t, `/0.1/token/${madeUp}`)).toBe(404);
    expect((await viaRouter(t, "HEAD", `/0.1/token/${madeUp}`)).status).toBe(404);
  });

  test("GET reads it and DELETE revokes it, and both paths then say 404 for either form", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["a.b"] });
    const upper = token.toUpperCase();
    const read = await t.request("GET", `/0.1/token/${upper}?scope=a.b`);
    expect(read.status).toBe(200);
    expect(read.json.data.token).toBe(token);
    const routed = await viaRouter(t, "GET", `/0.1/token/${upper}`);
    expect([routed.status, JSON.parse(routed.text).data.token]).toEqual([200, token]);
    expect((await t.request("DELETE", `/0.1/token/${upper}`)).status).toBe(200);
    for (const form of [token, upper]) {
      expect(await viaShortcut(t, `/0.1/token/${form}`)).toBe(404);
      expect((await viaRouter(t, "HEAD", `/0.1/token/${form}`)).status).toBe(404);
      expect((await t.request("GET", `/0.1/token/${form}`)).status).toBe(404);
    }
  });
});
