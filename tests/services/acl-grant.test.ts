// The grant rule decided on patterns (src/domain/acl-grant.ts): reference cases, then properties checked
// against the matcher itself (src/domain/acl.ts) on every string of a small alphabet.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { compileAcl } from "../../src/domain/acl.ts";
import { grantCheck, overlapWitness, uncoveredWitness } from "../../src/domain/acl-grant.ts";

describe("grant rule (§4.5, with deny entries)", () => {
  const id = { authId: "u1", sessionUuid: "s1" };
  test("anyone may add a negative entry; a positive one must be held", () => {
    const g = grantCheck(["auth.#", "!auth.tenants.#"], id);
    expect(g.mayGrant("!anything.at.all")).toBe(true);
    expect(g.mayGrant("auth.users.read")).toBe(true);
    expect(g.mayGrant("confd.users.read")).toBe(false);
    expect(g.mayGrant("auth.tenants.read")).toBe(false);
  });
  test("a pattern overlapping a deny entry is refused (finding 9)", () => {
    const g = grantCheck(["confd.#", "!confd.admin.#"], id);
    expect(g.mayGrant("confd.#")).toBe(false);
    expect(g.mayGrant("confd.*.x")).toBe(false); // confd.admin.x
    expect(g.mayGrant("confd.users.*")).toBe(true);
    expect(g.mayGrant("confd.users.#")).toBe(true);
    expect(g.mayGrant("confd.admin")).toBe(true); // `confd.admin.#` does not match `confd.admin`
  });
  test("a pattern is held only when allow entries cover all of it", () => {
    const g = grantCheck(["a.*", "a.b.#"], id);
    expect(g.mayGrant("a.x")).toBe(true);
    expect(g.mayGrant("a.b.c.d")).toBe(true);
    expect(g.mayGrant("a.#")).toBe(false); // a.x.y
    expect(g.mayGrant("a.b*")).toBe(true);
    expect(uncoveredWitness(["a.*", "a.b.#"], "a.#")).not.toBeNull();
  });
  test("me and my_session: the holder's own; the caller's ids are its me", () => {
    const g = grantCheck(["confd.users.me.#", "!confd.users.me.delete"], id);
    expect(g.mayGrant("confd.users.me.read")).toBe(true);
    expect(g.mayGrant("confd.users.u1.read")).toBe(true);
    expect(g.mayGrant("confd.users.u2.read")).toBe(false);
    expect(g.mayGrant("confd.users.*.read")).toBe(false);
    expect(g.mayGrant("confd.users.u1.delete")).toBe(false);
    expect(g.mayGrant("confd.users.me.*")).toBe(false);
    const d = grantCheck(["#", "!sessions.my_session.delete"], id);
    expect(d.mayGrant("sessions.s1.delete")).toBe(false);
    expect(d.mayGrant("sessions.*.delete")).toBe(false);
    expect(d.mayGrant("sessions.s2.delete")).toBe(true);
  });
  test("edit stands for edit and update on both sides", () => {
    expect(grantCheck(["x.edit"], id).mayGrant("x.update")).toBe(true);
    expect(grantCheck(["x.update"], id).mayGrant("x.edit")).toBe(false);
    expect(grantCheck(["x.#", "!x.update"], id).mayGrant("x.edit")).toBe(false);
  });
  test("taking `!x` out grants x, so it needs x; taking x out needs x too", () => {
    const g = grantCheck(["auth.#", "!auth.tenants.#"], id);
    expect(g.mayRevoke("!auth.users.read")).toBe(true);
    expect(g.mayRevoke("!confd.users.read")).toBe(false);
    expect(g.mayRevoke("auth.tenants.read")).toBe(false);
  });
  test("# with no deny entry grants everything", () => {
    expect(grantCheck(["#"], id).mayGrant("anything.#")).toBe(true);
    expect(grantCheck(["#", "!x.y"], id).mayGrant("#")).toBe(false);
  });
});

// Properties: patterns and strings over {a, b, ., *, #, me}; the matcher of src/domain/acl.ts is the judge.
const segment = fc.oneof(
  { weight: 1, arbitrary: fc.constant("me") },
  {
    weight: 6,
    arbitrary: fc.array(fc.constantFrom("a", "b", "*", "#"), { minLength: 1, maxLength: 3 }).map((cs) => cs.join("")),
  },
);
const pattern = fc.array(segment, { minLength: 1, maxLength: 3 }).map((ss) => ss.join("."));

/** Every string of length ≤ 5 over the symbols the patterns can tell apart. */
const STRINGS: string[] = (() => {
  const out = [""];
  let layer = [""];
  for (let n = 0; n < 5; n++) {
    layer = layer.flatMap((s) => ["a", "b", ".", "#", "z"].map((c) => s + c));
    out.push(...layer);
  }
  // `me` as a whole segment, in a few positions
  out.push("me", "a.me", "me.a", "a.me.b", "me.me");
  return out;
})();

const matches = (p: string, s: string) => compileAcl([p]).matches(s);

describe("grant rule properties (fast-check)", () => {
  test("overlap: a witness is matched by both; no witness → no common string", () => {
    fc.assert(
      fc.property(pattern, pattern, (a, b) => {
        const w = overlapWitness(a, b);
        if (w !== null) return matches(a, w) && matches(b, w);
        return STRINGS.every((s) => !(matches(a, s) && matches(b, s)));
      }),
      { seed: 42, numRuns: 300 },
    );
  });
  test("cover: a witness is matched by the pattern and no allow; no witness → every string of it allowed", () => {
    fc.assert(
      fc.property(fc.array(pattern, { minLength: 1, maxLength: 3 }), pattern, (allows, p) => {
        const w = uncoveredWitness(allows, p);
        if (w !== null) return matches(p, w) && !allows.some((a) => matches(a, w));
        return STRINGS.every((s) => !matches(p, s) || allows.some((a) => matches(a, s)));
      }),
      { seed: 7, numRuns: 300 },
    );
  });
  test("a granted pattern never lets the grantee reach what the caller is denied", () => {
    fc.assert(
      fc.property(
        fc.array(pattern, { minLength: 1, maxLength: 2 }),
        fc.array(pattern, { maxLength: 2 }),
        pattern,
        (allows, denies, p) => {
          const callerAcl = [...allows, ...denies.map((d) => `!${d}`)];
          if (!grantCheck(callerAcl, {}).mayGrant(p)) return true;
          const caller = compileAcl(callerAcl);
          return STRINGS.every((s) => !matches(p, s) || caller.matches(s));
        },
      ),
      { seed: 99, numRuns: 300 },
    );
  });
});
