// RFC 4514 §2.4 escaping of a DN attribute value (the direct user DN of an LDAP login), and why it is
// not ldapts' `DN` builder: if a later ldapts gets these right, the second test says to switch.
import { describe, expect, test } from "bun:test";
import { DN } from "ldapts";
import { escapeDnValue } from "../../src/services/integrations/ldap-filter.ts";

const samples: Array<[string, string]> = [
  ["alice", "alice"],
  [" lead", "\\ lead"],
  ["trail ", "trail\\ "],
  ["#hash", "\\#hash"],
  ['a"b+c,d;e<f>g\\h=i', 'a\\"b\\+c\\,d\\;e\\<f\\>g\\\\h\\=i'],
  ["nul\u0000x", "nul\\00x"],
  ["ctl\u0001x", "ctl\\01x"],
  ["ünï", "ünï"],
];

describe("DN value escaping (RFC 4514 §2.4)", () => {
  test("escapes the special characters, leading # and spaces, trailing spaces and control characters", () => {
    for (const [value, escaped] of samples) expect(escapeDnValue(value)).toBe(escaped);
  });

  test("ldapts' DN builder does not (quotes spaces, leaves NUL raw): the reason escapeDnValue exists", () => {
    expect(new DN({ uid: " lead" }).toString()).toBe('uid=" lead"');
    expect(new DN({ uid: "nul\u0000x" }).toString()).toBe("uid=nul\u0000x");
  });
});
