import { describe, expect, test } from "bun:test";
import { aclMatches, compileAcl, fillAcl } from "../../src/domain/acl.ts";

describe("ACL matching (wazo-auth's ACL matching reference cases)", () => {
  test("foo.bar.# matches below foo.bar but not foo.bar itself", () => {
    for (const access of ["foo.bar.x", "foo.bar.x.y", "foo.bar.*", "foo.bar.#"])
      expect(aclMatches(["foo.bar.#"], access)).toBe(true);
    expect(aclMatches(["foo.bar.#"], "foo.bar")).toBe(false);
    expect(aclMatches(["foo.#"], "foo")).toBe(false);
  });
  test("* is one segment (or part of one) and never crosses a dot", () => {
    expect(aclMatches(["foo.*.*"], "foo.bar.toto")).toBe(true);
    expect(aclMatches(["foo.*.*"], "foo.bar.toto.tata")).toBe(false);
    expect(aclMatches(["foo.b*"], "foo.bar")).toBe(true);
    expect(aclMatches(["foo.*"], "foo.")).toBe(true);
    expect(aclMatches(["foo.*"], "foo.a#b")).toBe(false);
  });
  test("# matches everything, the empty access included", () => {
    for (const access of ["", "a", "a.b.c", "x.y.#"]) expect(aclMatches(["#"], access)).toBe(true);
  });
  test("me matches the token's auth id; my_session its session", () => {
    const id = { authId: "123", sessionUuid: "s-1" };
    expect(aclMatches(["foo.#.me"], "foo.bar.123", id)).toBe(true);
    expect(aclMatches(["foo.#.me"], "foo.bar.me", id)).toBe(true);
    expect(aclMatches(["foo.#.me"], "foo.bar.456", id)).toBe(false);
    expect(aclMatches(["foo.me.read"], "foo.123.read", id)).toBe(true);
    expect(aclMatches(["sessions.my_session.delete"], "sessions.s-1.delete", id)).toBe(true);
    expect(aclMatches(["sessions.my_session.delete"], "sessions.s-2.delete", id)).toBe(false);
    expect(aclMatches(["foo.me"], "foo.123", {})).toBe(false);
    // only a whole segment is reserved
    expect(aclMatches(["foo.meh"], "foo.123h", id)).toBe(false);
  });
  test("edit also grants update, never the reverse", () => {
    expect(aclMatches(["auth.emails.e1.confirm.edit"], "auth.emails.e1.confirm.update")).toBe(true);
    expect(aclMatches(["auth.emails.e1.confirm.edit"], "auth.emails.e1.confirm.edit")).toBe(true);
    expect(aclMatches(["auth.emails.e1.confirm.update"], "auth.emails.e1.confirm.edit")).toBe(false);
  });
  test("a negative entry wins whatever the order", () => {
    expect(aclMatches(["foo.#", "!foo.me.bar.#", "foo.me.bar.123"], "foo.me.bar.123")).toBe(false);
    expect(aclMatches(["!*.bar", "foo.bar"], "foo.bar")).toBe(false);
    expect(aclMatches(["foo.bar", "!*.bar"], "foo.bar")).toBe(false);
    expect(aclMatches(["#", "!auth.users.#"], "auth.tenants.read")).toBe(true);
    expect(aclMatches(["#", "!auth.users.#"], "auth.users.read")).toBe(false);
    expect(aclMatches(["!foo"], "foo")).toBe(false);
  });
  test("regex characters in entries and accesses are literal", () => {
    expect(aclMatches(["a+b.(c)"], "a+b.(c)")).toBe(true);
    expect(aclMatches(["a+b.(c)"], "aab.c")).toBe(false);
    expect(aclMatches(["x.y"], "xzy")).toBe(false);
  });
  test("no required access → allowed; empty ACL → nothing", () => {
    expect(compileAcl([]).matches(null)).toBe(true);
    expect(compileAcl([]).matches("a")).toBe(false);
    expect(compileAcl(["a"]).matches(undefined)).toBe(true);
  });
});

test("fillAcl substitutes parameters with dots replaced by _", () => {
  expect(fillAcl("auth.policies.{policy_slug}.read", { policy_slug: "a.b.c" })).toBe("auth.policies.a_b_c.read");
  expect(fillAcl("auth.users.{user_uuid}.tokens.{client_id}.delete", { user_uuid: "u1", client_id: "my.app" })).toBe(
    "auth.users.u1.tokens.my_app.delete",
  );
});
