// Bad strings never reach the database: NUL, unpaired surrogates and oversized values are a 400
// (or a 404 for a path segment naming a resource) with the one error body, never a 500. Usernames
// refuse invisible characters and `:`, and are compared NFC-normalised.
import { expect, test } from "bun:test";
import { describeEachDb, type TestApp, type TestResponse } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";

const NUL = "a\u0000b";
const LONE = "bad\ud800name";
const long = (n: number) => "x".repeat(n);
const basic = (login: string, password: string) =>
  `Basic ${Buffer.from(`${login}:${password}`, "utf8").toString("base64")}`;

function expectInvalid(r: TestResponse, field: string) {
  expect([r.status, r.json?.error_id, r.json?.message]).toEqual([400, "invalid-data", "Invalid request"]);
  expect(Object.keys(r.json.details)).toContain(field);
  expect(typeof r.json.timestamp).toBe("number");
}

async function policy(t: TestApp, token: string): Promise<string> {
  const r = await t.request("POST", "/0.1/policies", {
    token,
    body: { name: `p${crypto.randomUUID().slice(0, 8)}`, acl: [] },
  });
  expect(r.status).toBe(200);
  return r.json.uuid;
}

describeEachDb("input limits", (get) => {
  test("NUL in query strings and path parameters: 400, or 404 where the segment names a resource", async () => {
    const t = get();
    const token = await adminToken(t.app);
    for (const path of ["/0.1/users", "/0.1/tenants", "/0.1/groups", "/0.1/policies", "/0.1/tokens", "/0.1/sessions"]) {
      expectInvalid(await t.request("GET", `${path}?search=a%00b`, { token }), "search");
    }
    expectInvalid(await t.request("GET", "/0.1/users?username=a%00b", { token }), "username");
    expectInvalid(await t.request("GET", "/0.1/idp?whatever=a%00", { token }), "whatever");
    for (const [method, path] of [
      ["DELETE", "/0.1/users/me/tokens/a%00b"],
      ["GET", "/0.1/external/goo%00gle/config"],
      ["GET", "/0.1/policies/a%00b"],
      ["DELETE", "/0.1/policies/a%00b"],
      ["PUT", "/0.1/idp/na%00tive/users/6b2a4a8e-5c1f-4a9e-9d44-0d4b3e1c2a11"],
    ] as const) {
      const r = await t.request(method, path, { token });
      expect([path, r.status, r.json?.error_id]).toEqual([path, 404, "not-found"]);
    }
    // an ACL entry in the path is a value, not a resource: 400
    const p = await policy(t, token);
    expectInvalid(await t.request("PUT", `/0.1/policies/${p}/acl/a%00b`, { token }), "access");
    expectInvalid(await t.request("PUT", `/0.1/policies/${p}/acl/${long(600)}`, { token }), "access");
  });

  test("NUL, unpaired surrogates and oversized values in bodies: 400 with the field named", async () => {
    const t = get();
    const token = await adminToken(t.app);
    expectInvalid(await t.request("POST", "/0.1/users", { token, body: { username: NUL } }), "username");
    expectInvalid(
      await t.request("POST", "/0.1/users", { token, body: { username: "ok", firstname: NUL } }),
      "firstname",
    );
    expectInvalid(
      await t.request("POST", "/0.1/users", { token, body: { username: "ok2", lastname: long(2700) } }),
      "lastname",
    );
    expectInvalid(
      await t.request("POST", "/0.1/users", {
        token,
        body: { username: "ok3", email_address: `${long(3000)}@example.com` },
      }),
      "email_address",
    );
    expectInvalid(
      await t.request("POST", "/0.1/users", { token, body: { username: "ok4", password: NUL } }),
      "password",
    );
    expectInvalid(await t.request("POST", "/0.1/tenants", { token, body: { name: LONE } }), "name");
    expectInvalid(
      await t.request("POST", "/0.1/tenants", { token, body: { name: "t", address: { city: NUL } } }),
      "address",
    );
    expectInvalid(await t.request("POST", "/0.1/groups", { token, body: { name: NUL } }), "name");
    expectInvalid(await t.request("POST", "/0.1/policies", { token, body: { name: "p", acl: [long(3000)] } }), "acl");
    const r = await t.request("POST", "/0.1/policies", { token, body: { name: "p", acl: ["ok", NUL] } });
    expect(r.json.details.acl["1"].constraint_id).toBe("predicate");
    expectInvalid(
      await t.request("POST", "/0.1/policies", { token, body: { name: "p", description: long(3000) } }),
      "description",
    );
    // strings the route does not declare are checked too, nested where they are
    const ext = await t.request("POST", "/0.1/external/google/config", {
      token,
      body: { client_id: "x", nested: { deep: [NUL] } },
    });
    expect([ext.status, ext.json.details.nested.deep["0"].constraint_id]).toEqual([400, "predicate"]);
    let deep: unknown = "x";
    for (let i = 0; i < 100; i++) deep = [deep];
    expectInvalid(await t.request("POST", "/0.1/external/google/config", { token, body: { deep } }), "deep");
    // nothing was written
    const users = await t.request("GET", "/0.1/users?recurse=true", { token });
    expect(users.json.items.some((u: { username: string }) => u.username?.startsWith("ok"))).toBe(false);
  });

  test("a body key __proto__ in an invalid field stays a key: Object.prototype is never touched", async () => {
    const t = get();
    const token = await adminToken(t.app);
    const bodies = [
      '{"__proto__": {"polluted": "a\\u0000"}}',
      '{"name": "p", "acl": {"__proto__": {"polluted": 1}}}',
      '{"__proto__": "\\u0000"}',
    ];
    for (const rawBody of bodies) {
      expect((await t.request("POST", "/0.1/policies", { token, rawBody })).status).toBe(400);
      expect(
        (
          await t.request("POST", "/0.1/external/google/config", {
            token,
            rawBody: rawBody.replace('"name": "p", ', '"x": "\\u0000", '),
          })
        ).status,
      ).toBe(400);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.keys(Object.prototype)).toEqual([]);
    }
    expect((await t.request("GET", "/0.1/backends")).status).toBe(200);
  });

  test("a login the database cannot compare is a plain 401", async () => {
    const t = get();
    for (const login of [NUL, LONE, long(5000)]) {
      const r = await t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: basic(login, "pw") } });
      expect([r.status, r.json.error_id]).toEqual([401, "authentication-failed"]);
    }
    expectInvalid(
      await t.request("POST", "/0.1/token", {
        body: { client_id: "€".repeat(1000), access_type: "offline" },
        headers: { Authorization: basic("x", "y") },
      }),
      "client_id",
    );
    expectInvalid(await t.request("GET", "/0.1/users/password/reset?username=a%00b"), "username");
  });

  test("usernames: no control, format or zero-width character, no colon; stored and compared NFC", async () => {
    const t = get();
    const token = await adminToken(t.app);
    for (const username of [
      "al:ice",
      "al\u200bice",
      "alice\u0007",
      "\ufeffalice",
      "al\u2060ice",
      "al\u200eice",
      "a\tb",
    ]) {
      const created = await t.request("POST", "/0.1/users", { token, body: { username } });
      expect([JSON.stringify(username), created.status, created.json.details?.username?.constraint_id]).toEqual([
        JSON.stringify(username),
        400,
        "regex",
      ]);
    }
    const created = await t.request("POST", "/0.1/users", { token, body: { username: "Jose\u0301", password: "pw" } });
    expect(created.status).toBe(200);
    expect(created.json.username).toBe("Jos\u00e9");
    const uuid = created.json.uuid;
    expectInvalid(
      await t.request("PUT", `/0.1/users/${uuid}`, { token, body: { username: "jos\u00e9:x" } }),
      "username",
    );
    const dup = await t.request("POST", "/0.1/users", { token, body: { username: "jos\u00e9" } });
    expect(dup.status).toBe(409);
    for (const login of ["Jos\u00e9", "jose\u0301", "JOSE\u0301"]) {
      const r = await t.request("POST", "/0.1/token", { body: {}, headers: { Authorization: basic(login, "pw") } });
      expect([JSON.stringify(login), r.status]).toEqual([JSON.stringify(login), 200]);
    }
  });
});

describeEachDb(
  "input limits of registration",
  (get) => {
    test("registration refuses bad usernames and unstorable strings before anything is written", async () => {
      const t = get();
      const base = { password: "pw", email_address: "reg@example.com" };
      expectInvalid(
        await t.request("POST", "/0.1/users/register", { body: { ...base, username: "re:g" } }),
        "username",
      );
      expectInvalid(
        await t.request("POST", "/0.1/users/register", { body: { ...base, username: "re\u200bg" } }),
        "username",
      );
      expectInvalid(
        await t.request("POST", "/0.1/users/register", { body: { ...base, username: "reg", firstname: NUL } }),
        "firstname",
      );
      expectInvalid(await t.request("POST", "/0.1/users/register", { body: { ...base, username: LONE } }), "username");
    });
  },
  { config: { enabled_http_plugins: { user_registration: true } } },
);
