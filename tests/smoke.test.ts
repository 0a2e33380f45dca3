import { expect, test } from "bun:test";
import { describeEachDb } from "./helpers/app.ts";
import { adminToken } from "./helpers/fixtures.ts";

describeEachDb("smoke", (get) => {
  test("token check", async () => {
    const t = get();
    const token = await adminToken(t.app);
    const r = await t.request("HEAD", `/0.1/token/${token}?scope=foo.bar`);
    expect(r.status).toBe(204);
    const g = await t.request("GET", `/0.1/token/${token}`);
    expect(g.status).toBe(200);
    console.log(g.json);
    const s = await t.request("GET", `/0.1/status`, { token });
    console.log(s.status, s.json);
    const n = await t.request("GET", `/0.1/nope`);
    console.log(n.status, n.json);
    const m = await t.request("PUT", `/0.1/status`);
    console.log(m.status, m.json);
    const api = await t.request("GET", `/0.1/api/api.yml`);
    console.log(api.status, api.text.slice(0, 300));
  });
});
