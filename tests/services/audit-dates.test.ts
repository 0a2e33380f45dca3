// Date and time parameters (GET /0.1/audit's `since` and `until`, the only ones of the API): one rule
// (src/domain/datetime.ts), RFC 3339 in years 0001–9999 UTC. What a `timestamptz` cannot hold — year 0,
// 10000 and beyond, an offset that pushes an edge year over, a day that does not exist, a leap
// second — is a 400 with the one error body naming the parameter, never PostgreSQL's 22008 as a 500.
import { expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { parseDateTime } from "../../src/domain/datetime.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tokenFor } from "../helpers/fixtures.ts";

const REFUSED = [
  "0000-01-01T00:00:00Z",
  "0000-12-31",
  "10000-01-01T00:00:00Z",
  "+010000-01-01T00:00:00Z",
  "-000001-01-01T00:00:00Z",
  "0001-01-01T00:00:00+00:01",
  "9999-12-31T23:59:59-00:01",
  "2026-02-29",
  "2100-02-29T00:00:00Z",
  "2026-04-31T00:00:00Z",
  "2026-13-01",
  "2026-00-10",
  "2026-01-00",
  "2016-12-31T23:59:60Z",
  "2026-01-01T24:00:00Z",
  "2026-01-01T23:60:00Z",
  "2026-01-01T00:00:00+24:00",
  "2026-01-01T00:00:00+05:60",
  "99999999999999999999",
  "1790000000",
  "2026-01-01T00:00:00.1234567890Z",
  "2026-01-01T",
  "yesterday",
];

const ACCEPTED: Array<[string, string]> = [
  ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"],
  ["0001-01-01T00:59:00+00:59", "0001-01-01T00:00:00.000Z"],
  ["9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"],
  ["9999-12-31T22:59:59+01:00", "9999-12-31T21:59:59.000Z"],
  ["2024-02-29", "2024-02-29T00:00:00.000Z"],
  ["2000-02-29T12:00:00-0530", "2000-02-29T17:30:00.000Z"],
  ["0099-06-01T00:00:00Z", "0099-06-01T00:00:00.000Z"],
  ["2026-11-28 06:00:00.123456789z", "2026-11-28T06:00:00.123Z"],
  ["2026-11-28t06:00", "2026-11-28T06:00:00.000Z"],
];

test("the rule: what it accepts is the instant written, in UTC; what it refuses is null", () => {
  expect(REFUSED.filter((v) => parseDateTime(v) !== null)).toEqual([]);
  expect(ACCEPTED.map(([v]) => parseDateTime(v)?.toISOString() ?? null)).toEqual(ACCEPTED.map(([, iso]) => iso));
});

describeEachDb("audit: date and time parameters", (get) => {
  test("since and until: every edge refused with the one 400 body naming the parameter; the extremes accepted", async () => {
    const t = get();
    const { token } = await tokenFor(t.app, { acl: ["auth.audit.read"] });
    for (const name of ["since", "until"]) {
      for (const value of REFUSED) {
        const r = await t.request("GET", `/0.1/audit?${name}=${encodeURIComponent(value)}`, { token });
        expect([value, r.status, r.json.error_id, r.json.resource, Object.keys(r.json.details)]).toEqual([
          value,
          400,
          "invalid-data",
          "audit",
          [name],
        ]);
        expect(r.json.details[name].constraint_id).toBe("iso8601");
        expect(typeof r.json.timestamp).toBe("number");
      }
      for (const [value] of ACCEPTED) {
        const r = await t.request("GET", `/0.1/audit?${name}=${encodeURIComponent(value)}`, { token });
        expect([value, r.status]).toEqual([value, 200]);
      }
    }
    // The range's ends hold the extremes: everything lies between year 0001 and year 9999.
    const all = await t.request("GET", "/0.1/audit?since=0001-01-01&until=9999-12-31T23:59:59.999Z", { token });
    expect([all.status, all.json.total]).toEqual([200, all.json.filtered]);
  });

  test("the OpenAPI document declares them as date-time", async () => {
    const t = get();
    const doc = parseYaml((await t.request("GET", "/0.1/api/api.yml")).text);
    const params = doc.paths["/audit"].get.parameters as Array<{ name: string; schema: Record<string, unknown> }>;
    const since = params.find((p) => p.name === "since")!;
    expect(JSON.stringify(since.schema)).toContain('"format":"date-time"');
  });
});
