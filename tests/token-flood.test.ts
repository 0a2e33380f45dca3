// Unknown tokens are remembered briefly and looked up through a bounded gate (a flood of made-up
// tokens must not slow valid checks; speed itself is measured by bench/flood.ts). What must hold:
// valid tokens are never refused, unknown ones are 404, and an id becomes valid the moment a token
// with it is created, even right after it was looked up as unknown.
import { expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { insertToken } from "../src/services/tokens.ts";
import { describeEachDb } from "./helpers/app.ts";
import { createUserRow, tokenFor } from "./helpers/fixtures.ts";

describeEachDb("token checks under a flood of unknown tokens", (get) => {
  test("a token created after its id was looked up as unknown is accepted at once", async () => {
    const t = get();
    const id = randomUUID();
    expect((await t.request("HEAD", `/0.1/token/${id}`)).status).toBe(404);
    expect(t.app.tokenCache.knownUnknown(id)).toBe(true);
    const userUuid = await createUserRow(t.app);
    await insertToken(t.app, t.app.db, {
      uuid: id,
      authId: userUuid,
      pbxUserUuid: null,
      acl: ["confd.#"],
      metadata: { uuid: userUuid, tenant_uuid: t.app.topTenantUuid, auth_id: userUuid },
      expiration: 3600,
      userAgent: "tests",
      remoteAddr: "127.0.0.1",
      sessionTenantUuid: t.app.topTenantUuid,
      mobile: false,
    });
    expect((await t.request("HEAD", `/0.1/token/${id}?scope=confd.users.read`)).status).toBe(204);
  });

  test("during a burst of unknown tokens, valid checks answer 204 and unknown ones 404, never anything else", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["confd.#"] });
    const uncached = await tokenFor(t.app, { acl: ["confd.#"] });
    const unknown = Array.from({ length: 300 }, () => t.request("HEAD", `/0.1/token/${randomUUID()}`).then((r) => r.status));
    const valid = Array.from({ length: 50 }, () => t.request("HEAD", `/0.1/token/${token}?scope=confd.users.read`).then((r) => r.status));
    const firstLookup = t.request("HEAD", `/0.1/token/${uncached.token}`).then((r) => r.status);
    expect(new Set(await Promise.all(unknown))).toEqual(new Set([404]));
    expect(new Set(await Promise.all(valid))).toEqual(new Set([204]));
    expect(await firstLookup).toBe(204);
  });

  test("an expired token stays refused", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["confd.#"], expiration: 1 });
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(204);
    await Bun.sleep(2100);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
    expect((await t.request("HEAD", `/0.1/token/${token}`)).status).toBe(404);
  });
});
