// The filter grammar of RFC 7644 §3.4.2.2 as a table: what parses (every operator, and/or/not,
// grouping and precedence, value paths, URN-qualified paths, literals) and what is refused with
// 400 invalidFilter; the evaluator's meaning (case-exactness per schema, multi-valued attributes);
// and, against the database, that a filter compiled to SQL selects exactly what the in-memory
// evaluation selects over the same users (the two must never disagree).
import { describe, expect, test } from "bun:test";
import { matches } from "../../src/services/scim/filter-match.ts";
import { parseFilter, parsePatchPath, type Filter } from "../../src/services/scim/filter-parse.ts";
import { ScimError } from "../../src/services/scim/errors.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken, createTenantRow } from "../helpers/fixtures.ts";
import { ENTERPRISE, scim, scimToken, USER_SCHEMA } from "../helpers/scim.ts";

const p = (attr: string, sub: string | null = null, schema: string | null = null) => ({ schema, attr, sub });

describe("SCIM filter parser", () => {
  const table: Array<[string, Filter]> = [
    ['userName eq "bjensen"', { op: "eq", path: p("userName"), value: "bjensen" }],
    ['name.familyName co "O\'Malley"', { op: "co", path: p("name", "familyName"), value: "O'Malley" }],
    ['userName sw "J"', { op: "sw", path: p("userName"), value: "J" }],
    [
      'urn:ietf:params:scim:schemas:core:2.0:User:name.familyName ew "son"',
      { op: "ew", path: p("name", "familyName", USER_SCHEMA), value: "son" },
    ],
    ["title pr", { op: "pr", path: p("title") }],
    [
      'meta.lastModified gt "2011-05-13T04:42:34Z"',
      { op: "gt", path: p("meta", "lastModified"), value: "2011-05-13T04:42:34Z" },
    ],
    [
      'meta.lastModified ge "2011-05-13T04:42:34Z"',
      { op: "ge", path: p("meta", "lastModified"), value: "2011-05-13T04:42:34Z" },
    ],
    ["x lt 10", { op: "lt", path: p("x"), value: 10 }],
    ["x le -1.5e2", { op: "le", path: p("x"), value: -150 }],
    ['userName ne "a"', { op: "ne", path: p("userName"), value: "a" }],
    ["active eq true", { op: "eq", path: p("active"), value: true }],
    ["active EQ False", { op: "eq", path: p("active"), value: false }],
    ["nickName eq null", { op: "eq", path: p("nickName"), value: null }],
    [
      'title pr and userType eq "Employee"',
      { op: "and", left: { op: "pr", path: p("title") }, right: { op: "eq", path: p("userType"), value: "Employee" } },
    ],
    [
      'title pr or userType eq "Intern"',
      { op: "or", left: { op: "pr", path: p("title") }, right: { op: "eq", path: p("userType"), value: "Intern" } },
    ],
    [
      // and binds tighter than or
      'a eq "1" or b eq "2" and c eq "3"',
      {
        op: "or",
        left: { op: "eq", path: p("a"), value: "1" },
        right: {
          op: "and",
          left: { op: "eq", path: p("b"), value: "2" },
          right: { op: "eq", path: p("c"), value: "3" },
        },
      },
    ],
    [
      'userType eq "Employee" and (emails co "example.com" or emails.value co "example.org")',
      {
        op: "and",
        left: { op: "eq", path: p("userType"), value: "Employee" },
        right: {
          op: "or",
          left: { op: "co", path: p("emails"), value: "example.com" },
          right: { op: "co", path: p("emails", "value"), value: "example.org" },
        },
      },
    ],
    [
      'userType ne "Employee" and not (emails co "example.com" or emails.value co "example.org")',
      {
        op: "and",
        left: { op: "ne", path: p("userType"), value: "Employee" },
        right: {
          op: "not",
          filter: {
            op: "or",
            left: { op: "co", path: p("emails"), value: "example.com" },
            right: { op: "co", path: p("emails", "value"), value: "example.org" },
          },
        },
      },
    ],
    [
      'userType eq "Employee" and emails[type eq "work" and value co "@example.com"]',
      {
        op: "and",
        left: { op: "eq", path: p("userType"), value: "Employee" },
        right: {
          op: "has",
          path: p("emails"),
          filter: {
            op: "and",
            left: { op: "eq", path: p("type"), value: "work" },
            right: { op: "co", path: p("value"), value: "@example.com" },
          },
        },
      },
    ],
    [
      `${ENTERPRISE}:manager.value eq "26118915-6090-4610-87e4-49d8ca9f808d"`,
      { op: "eq", path: p("manager", "value", ENTERPRISE), value: "26118915-6090-4610-87e4-49d8ca9f808d" },
    ],
    ['userName eq "a \\"quoted\\" \\u00e9"', { op: "eq", path: p("userName"), value: 'a "quoted" é' }],
  ];
  for (const [text, tree] of table) test(`parses ${text}`, () => expect(parseFilter(text)).toEqual(tree));

  const refused = [
    "",
    "userName",
    "userName eq",
    'userName like "x"',
    'userName eq "unterminated',
    '(userName eq "x"',
    'userName eq "x")',
    'userName eq "x" and',
    'not userName eq "x"',
    'emails[type eq "work"',
    'emails[type eq "work" and addresses[x eq "y"]]',
    "userName eq bare",
    'a.b.c eq "x"',
    'userName eq "x" userName eq "y"',
    "#",
    `${"(".repeat(60)}a pr${")".repeat(60)}`,
  ];
  for (const text of refused)
    test(`refuses ${JSON.stringify(text)} with 400 invalidFilter`, () => {
      let err: unknown;
      try {
        parseFilter(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ScimError);
      expect((err as ScimError).status).toBe(400);
      expect((err as ScimError).scimType).toBe("invalidFilter");
    });

  test("PATCH paths: attribute, sub-attribute, value filter, value filter then sub-attribute, extension", () => {
    expect(parsePatchPath("name.familyName")).toEqual({ path: p("name", "familyName"), filter: null, sub: null });
    expect(parsePatchPath('emails[type eq "work"].value')).toEqual({
      path: p("emails"),
      filter: { op: "eq", path: p("type"), value: "work" },
      sub: "value",
    });
    expect(parsePatchPath('members[value eq "2819c223"]')).toEqual({
      path: p("members"),
      filter: { op: "eq", path: p("value"), value: "2819c223" },
      sub: null,
    });
    expect(parsePatchPath(`${ENTERPRISE}:department`)).toEqual({
      path: p("department", null, ENTERPRISE),
      filter: null,
      sub: null,
    });
    expect(() => parsePatchPath('emails[type eq "work"]value')).toThrow(ScimError);
  });
});

describe("SCIM filter evaluation", () => {
  const user = {
    schemas: [USER_SCHEMA, ENTERPRISE],
    id: "2819c223-7f76-453a-919d-413861904646",
    externalId: "Ext-1",
    userName: "BJensen",
    name: { givenName: "Barbara", familyName: "Jensen" },
    active: true,
    emails: [
      { value: "bjensen@example.com", type: "work", primary: true },
      { value: "babs@jensen.org", type: "home" },
    ],
    [ENTERPRISE]: { department: "Tour Operations", employeeNumber: "701984" },
  };
  const table: Array<[string, boolean]> = [
    ['userName eq "bjensen"', true], // userName is not case-exact
    ['externalId eq "ext-1"', false], // externalId is case-exact
    ['externalId eq "Ext-1"', true],
    ['id eq "2819C223-7F76-453A-919D-413861904646"', false],
    ['name.familyName co "ens"', true],
    ['name.familyName sw "JEN"', true],
    ['name.familyName ew "sen"', true],
    ['name.familyName ew "x"', false],
    ["name.middleName pr", false],
    ["name pr", false], // a complex attribute is never "present" as a value
    ["emails pr", true],
    ['emails co "jensen.org"', true], // some value of a multi-valued attribute
    ['emails[type eq "home"].value ew ".org"', true],
    ['emails[type eq "work" and value co "jensen.org"]', false],
    ['emails[type eq "home" and value co "jensen.org"]', true],
    ["active eq true", true],
    ['active eq "True"', true], // Entra's string booleans
    ["active ne true", false],
    ['userName gt "A"', true],
    ['userName lt "A"', false],
    ['userName ge "bjensen"', true],
    ['userName le "bjensem"', false],
    ['nickName ne "x"', true], // absent: not equal
    ["nickName eq null", true],
    [`${ENTERPRISE}:department eq "tour operations"`, true],
    ['department eq "Tour Operations"', false], // without its URN it is not a core attribute
    [`${ENTERPRISE}:employeeNumber gt "7"`, true],
    ['not (userName eq "bjensen")', false],
    ['userName eq "x" or name.givenName eq "barbara"', true],
    ['userName eq "x" or name.givenName eq "barbara" and active eq false', false],
  ];
  for (const [text, want] of table)
    test(`${text} → ${want}`, () => expect(matches(parseFilter(text), user, "User")).toBe(want));
});

describeEachDb("SCIM filters in the database agree with the evaluator", (get) => {
  test("every filter of the table selects the same users through the list as in memory", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const bearer = await scimToken(t, await adminToken(t.app), tenant);
    const people = [
      ["alice", "Alice", "Archer", true, ["alice@example.com"], "E-1"],
      ["Bob", "Bob", "Builder", false, ["bob@example.org", "bobby@home.net"], "e-2"],
      ["carol_x", null, "Xavier", true, [], null],
      ["dave%", "Dave", null, true, ["dave@example.com"], "E-3"],
      ["Éve", "Éve", "Ève", false, ["eve@EXAMPLE.com"], "E_4"],
    ] as const;
    for (const [userName, given, family, active, mails, ext] of people) {
      const r = await scim(t, bearer, "POST", "/Users", {
        schemas: [USER_SCHEMA],
        userName,
        ...(given || family
          ? { name: { ...(given ? { givenName: given } : {}), ...(family ? { familyName: family } : {}) } }
          : {}),
        active,
        emails: mails.map((value, i) => ({ value, primary: i === 0, type: i === 0 ? "work" : "home" })),
        ...(ext ? { externalId: ext } : {}),
      });
      expect(r.status).toBe(201);
    }
    const all = (await scim(t, bearer, "GET", "/Users?count=100")).json.Resources as Array<Record<string, unknown>>;
    expect(all).toHaveLength(people.length);
    const filters = [
      'userName eq "ALICE"',
      'userName ne "alice"',
      'userName co "O"',
      'userName sw "b"',
      'userName ew "%"',
      'userName co "_"',
      'userName gt "b"',
      'userName le "carol_x"',
      "name.givenName pr",
      "not (name.givenName pr)",
      'name.familyName eq "ève"',
      'name.familyName lt "C"',
      "active eq true",
      "active eq false",
      'active eq "False"',
      "active ne true",
      'externalId eq "E-1"',
      'externalId eq "e-1"',
      'externalId sw "E"',
      "externalId pr",
      'emails co "example.com"',
      'emails.value ew ".org"',
      'emails eq "EVE@example.com"',
      "emails pr",
      'emails[type eq "home"]',
      'emails[value eq "bob@example.org"]',
      'emails[type eq "work"].value eq "alice@example.com"',
      'emails[not (value co "example")]',
      'userName eq "alice" or emails co "home.net"',
      'active eq true and (name.familyName sw "a" or externalId eq "E-3")',
      "not (active eq true and emails pr)",
      'not (userName ne "Bob")',
      'displayName pr or userName sw "d"',
      'id pr and userName co "e"',
    ];
    for (const filter of filters) {
      const r = await scim(t, bearer, "GET", `/Users?count=100&filter=${encodeURIComponent(filter)}`);
      expect([filter, r.status]).toEqual([filter, 200]);
      const got = (r.json.Resources as Array<{ userName: string }>).map((u) => u.userName).sort();
      const want = all
        .filter((u) => matches(parseFilter(filter), u, "User"))
        .map((u) => u.userName as string)
        .sort();
      expect([filter, got]).toEqual([filter, want]);
      expect(r.json.totalResults).toBe(want.length);
    }
    const bad = await scim(t, bearer, "GET", `/Users?filter=${encodeURIComponent("userName eq")}`);
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ status: "400", scimType: "invalidFilter" });
  });

  test("sortBy, sortOrder, startIndex and count page the ListResponse; attributes and excludedAttributes", async () => {
    const t = get();
    const tenant = await createTenantRow(t.app);
    const bearer = await scimToken(t, await adminToken(t.app), tenant);
    for (const [name, dept] of [
      ["m1", "Zeta"],
      ["m3", "alpha"],
      ["m2", "Beta"],
      ["m4", null],
    ] as const)
      await scim(t, bearer, "POST", "/Users", {
        schemas: [USER_SCHEMA, ENTERPRISE],
        userName: name,
        name: { familyName: name.toUpperCase() },
        ...(dept ? { [ENTERPRISE]: { department: dept } } : {}),
      });
    const names = async (q: string) => {
      const r = await scim(t, bearer, "GET", `/Users?${q}`);
      expect(r.status).toBe(200);
      return { names: r.json.Resources.map((u: { userName: string }) => u.userName), json: r.json };
    };
    expect((await names("sortBy=userName")).names).toEqual(["m1", "m2", "m3", "m4"]);
    expect((await names("sortBy=userName&sortOrder=descending")).names).toEqual(["m4", "m3", "m2", "m1"]);
    expect((await names("sortBy=name.familyName&sortOrder=descending")).names).toEqual(["m4", "m3", "m2", "m1"]);
    // an attribute with no column sorts in memory, absent values last, case-insensitively
    expect((await names(`sortBy=${ENTERPRISE}:department`)).names).toEqual(["m3", "m2", "m1", "m4"]);
    const page = await names("sortBy=userName&startIndex=2&count=2");
    expect(page.names).toEqual(["m2", "m3"]);
    expect(page.json).toMatchObject({ totalResults: 4, startIndex: 2, itemsPerPage: 2 });
    const beyond = await names("sortBy=userName&startIndex=10&count=2");
    expect(beyond.json).toMatchObject({ totalResults: 4, startIndex: 10, itemsPerPage: 0, Resources: [] });
    const counted = await names("count=0");
    expect(counted.json).toMatchObject({ totalResults: 4, itemsPerPage: 0 });
    const only = await scim(
      t,
      bearer,
      "GET",
      `/Users?filter=${encodeURIComponent('userName eq "m1"')}&attributes=userName,${ENTERPRISE}:department`,
    );
    expect(only.json.Resources[0]).toEqual({
      schemas: [USER_SCHEMA, ENTERPRISE],
      id: only.json.Resources[0].id,
      userName: "m1",
      [ENTERPRISE]: { department: "Zeta" },
    });
    const without = await scim(t, bearer, "GET", `/Users/${only.json.Resources[0].id}?excludedAttributes=name,meta`);
    expect(without.json.name).toBeUndefined();
    expect(without.json.meta).toBeUndefined();
    expect(without.json.userName).toBe("m1");
    const badOrder = await scim(t, bearer, "GET", "/Users?sortOrder=sideways");
    expect(badOrder.json).toMatchObject({ status: "400", scimType: "invalidValue" });
  });
});
