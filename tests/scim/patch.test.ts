// PATCH (RFC 7644 §3.5.2) on a resource as SCIM JSON, with the RFC's own examples: add (§3.5.2.1),
// remove (§3.5.2.2), replace (§3.5.2.3), with and without path, value filters, sub-attributes,
// extension attributes; and the refusals (400 with scimType).
import { describe, expect, test } from "bun:test";
import { applyPatch, patchOpsOf, type PatchOp } from "../../src/services/scim/patch.ts";
import { ScimError } from "../../src/services/scim/errors.ts";
import { ENTERPRISE, GROUP_SCHEMA, PATCH_OP, USER_SCHEMA } from "../helpers/scim.ts";

const group = () => ({
  schemas: [GROUP_SCHEMA],
  id: "acbf3ae7-8463-4692-b4fd-9b4da3f908ce",
  displayName: "Tour Guides",
  members: [
    { value: "2819c223-7f76-453a-919d-413861904646", display: "Babs Jensen" },
    { value: "902c246b-6245-4190-8e05-00816be7344a", display: "Mandy Pepperidge" },
  ],
});
const user = () => ({
  schemas: [USER_SCHEMA, ENTERPRISE],
  id: "2819c223-7f76-453a-919d-413861904646",
  userName: "bjensen",
  name: { givenName: "Barbara", familyName: "Jensen" },
  emails: [
    { value: "bjensen@example.com", type: "work", primary: true },
    { value: "babs@jensen.org", type: "home" },
  ],
  [ENTERPRISE]: { department: "Tour Operations", manager: { value: "26118915" } },
});
/** Operations as clients write them (any case of `op`, anything at all: the parser judges). */
const ops = (...o: Array<{ op: string; path?: string; value?: unknown }>): PatchOp[] =>
  patchOpsOf({ schemas: [PATCH_OP], Operations: o });
const fails = (f: () => unknown, scimType: string) => {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ScimError);
  expect([(err as ScimError).status, (err as ScimError).scimType as string]).toEqual([400, scimType]);
};

describe("RFC 7644 §3.5.2.1 add", () => {
  test("a member added to a group (path members, array value)", () => {
    const out = applyPatch(
      group(),
      ops({
        op: "add",
        path: "members",
        value: [{ display: "Babs", $ref: "x", value: "2819c223-7f76-453a-919d-413861904646" }, { value: "new-1" }],
      }),
      "Group",
    );
    expect((out.members as Array<{ value: string }>).map((m) => m.value)).toEqual([
      "2819c223-7f76-453a-919d-413861904646",
      "902c246b-6245-4190-8e05-00816be7344a",
      "2819c223-7f76-453a-919d-413861904646",
      "new-1",
    ]);
  });
  test("no path: the value's attributes added (an email appended, a nickname set)", () => {
    const out = applyPatch(
      user(),
      ops({ op: "add", value: { emails: [{ value: "babs@jensen.org.uk", type: "home" }], nickName: "Babs" } }),
      "User",
    );
    expect((out.emails as unknown[]).length).toBe(3);
    expect(out.nickName).toBe("Babs");
  });
  test("an equal value is not added twice", () => {
    const out = applyPatch(
      user(),
      ops({ op: "add", path: "emails", value: [{ value: "babs@jensen.org", type: "home" }] }),
      "User",
    );
    expect((out.emails as unknown[]).length).toBe(2);
  });
  test("an extension attribute by its URN path, and the extension's object whole", () => {
    let out = applyPatch(user(), ops({ op: "add", path: `${ENTERPRISE}:employeeNumber`, value: "701984" }), "User");
    expect(out[ENTERPRISE]).toEqual({
      department: "Tour Operations",
      manager: { value: "26118915" },
      employeeNumber: "701984",
    });
    out = applyPatch(user(), ops({ op: "add", value: { [ENTERPRISE]: { costCenter: "4130" } } }), "User");
    expect((out[ENTERPRISE] as Record<string, unknown>).costCenter).toBe("4130");
  });
});

describe("RFC 7644 §3.5.2.2 remove", () => {
  test("a single member by a value filter", () => {
    const out = applyPatch(
      group(),
      ops({ op: "remove", path: 'members[value eq "2819c223-7f76-453a-919d-413861904646"]' }),
      "Group",
    );
    expect(out.members).toEqual([{ value: "902c246b-6245-4190-8e05-00816be7344a", display: "Mandy Pepperidge" }]);
  });
  test("all members", () => {
    const out = applyPatch(group(), ops({ op: "remove", path: "members" }), "Group");
    expect(out.members).toBeUndefined();
  });
  test("members named by value (Entra ID's form)", () => {
    const out = applyPatch(
      group(),
      ops({ op: "Remove", path: "members", value: [{ value: "902c246b-6245-4190-8e05-00816be7344a" }] }),
      "Group",
    );
    expect((out.members as Array<{ value: string }>).map((m) => m.value)).toEqual([
      "2819c223-7f76-453a-919d-413861904646",
    ]);
  });
  test("a sub-attribute of the values a filter selects", () => {
    const out = applyPatch(user(), ops({ op: "remove", path: 'emails[type eq "work"].primary' }), "User");
    expect(out.emails).toEqual([
      { value: "bjensen@example.com", type: "work" },
      { value: "babs@jensen.org", type: "home" },
    ]);
  });
  test("a sub-attribute, and an extension attribute", () => {
    let out = applyPatch(user(), ops({ op: "remove", path: "name.givenName" }), "User");
    expect(out.name).toEqual({ familyName: "Jensen" });
    out = applyPatch(user(), ops({ op: "remove", path: `${ENTERPRISE}:manager` }), "User");
    expect(out[ENTERPRISE]).toEqual({ department: "Tour Operations" });
  });
  test("remove needs a path: 400 noTarget", () => fails(() => ops({ op: "remove" }), "noTarget"));
});

describe("RFC 7644 §3.5.2.3 replace", () => {
  test("all members replaced", () => {
    const out = applyPatch(
      group(),
      ops({ op: "replace", path: "members", value: [{ display: "James Smith", value: "08e1d05d" }] }),
      "Group",
    );
    expect(out.members).toEqual([{ display: "James Smith", value: "08e1d05d" }]);
  });
  test("the work address of a user (a filter and an object value)", () => {
    const out = applyPatch(
      user(),
      ops({ op: "replace", path: 'emails[type eq "work"]', value: { type: "work", value: "bjensen@example.net" } }),
      "User",
    );
    expect((out.emails as unknown[])[0]).toEqual({
      value: "bjensen@example.net",
      type: "work",
      primary: true,
    });
  });
  test("a sub-attribute through a filter, and no path with several attributes", () => {
    let out = applyPatch(
      user(),
      ops({ op: "replace", path: 'emails[type eq "home"].value', value: "babs@home.example" }),
      "User",
    );
    expect((out.emails as Array<{ value: string }>)[1]!.value).toBe("babs@home.example");
    out = applyPatch(
      user(),
      ops({ op: "replace", value: { userName: "babs", "name.familyName": "Jensen-Smith", active: false } }),
      "User",
    );
    expect([out.userName, (out.name as { familyName: string }).familyName, out.active]).toEqual([
      "babs",
      "Jensen-Smith",
      false,
    ]);
  });
  test("a complex attribute is merged: the sub-attributes not given stay", () => {
    const out = applyPatch(user(), ops({ op: "replace", path: "name", value: { familyName: "Smith" } }), "User");
    expect(out.name).toEqual({ givenName: "Barbara", familyName: "Smith" });
  });
  test("a filter that matches nothing: an equality filter makes the value (Entra ID), another is 400 noTarget", () => {
    const out = applyPatch(
      user(),
      ops({ op: "Replace", path: 'emails[type eq "other"].value', value: "o@example.org" }),
      "User",
    );
    expect((out.emails as unknown[])[2]).toEqual({ type: "other", value: "o@example.org" });
    fails(
      () => applyPatch(user(), ops({ op: "replace", path: 'emails[value co "nothing"].value', value: "x" }), "User"),
      "noTarget",
    );
  });
  test("the resource given is never changed", () => {
    const u = user();
    applyPatch(u, ops({ op: "replace", path: "userName", value: "x" }), "User");
    expect(u).toEqual(user());
  });
});

describe("PatchOp refusals", () => {
  test("not a PatchOp, no operations, an unknown op, a malformed path", () => {
    fails(() => patchOpsOf({ Operations: [{ op: "add", value: {} }] }), "invalidSyntax");
    fails(() => patchOpsOf({ schemas: [PATCH_OP], Operations: [] }), "invalidSyntax");
    fails(() => ops({ op: "move", path: "x", value: 1 }), "invalidSyntax");
    fails(() => ops({ op: "add", path: "userName" }), "invalidValue");
    fails(() => applyPatch(user(), ops({ op: "add", path: "emails[type eq", value: "x" }), "User"), "invalidPath");
    fails(() => applyPatch(user(), ops({ op: "add", value: "not an object" }), "User"), "invalidValue");
  });
});
