// The one rule for a date or time given as a parameter (query string or body): RFC 3339 §5.6's
// date-time (its §5.6 note allows a space for the `T` and lower-case `t`/`z`), or a full-date alone
// (midnight UTC), or a date-time without an offset (UTC). Every field is checked against the calendar
// (RFC 3339 §5.7: the day exists in its month, leap years included), and the instant must lie in
// years 0001–9999 UTC: PostgreSQL (and PGlite, the same server) refuses year 0 ("22008 date/time
// field value out of range") and an ISO text of a year past 9999 (`+010000-…`), which the Date a
// query sends would become. A leap second (`:60`) is refused: a `timestamptz` cannot hold it.
import { z } from "zod";

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

const FIRST = new Date("0001-01-01T00:00:00Z").getTime();
const LAST = new Date("9999-12-31T23:59:59.999Z").getTime();

const daysIn = (year: number, month: number) =>
  month === 2
    ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
      ? 29
      : 28
    : [4, 6, 9, 11].includes(month)
      ? 30
      : 31;

/** Minutes east of UTC of an RFC 3339 time-offset (`Z`, `±hh`, `±hhmm`, `±hh:mm`), or null when out of range. */
function offsetMinutes(offset: string | undefined): number | null {
  if (offset === undefined || offset === "Z" || offset === "z") return 0;
  const hours = Number(offset.slice(1, 3));
  const minutes = offset.length > 3 ? Number(offset.slice(-2)) : 0;
  // RFC 3339 §5.6 time-numoffset: hh 00–23, mm 00–59.
  if (hours > 23 || minutes > 59) return null;
  return (offset[0] === "-" ? -1 : 1) * (hours * 60 + minutes);
}

/** The instant `text` names, or null when it breaks the rule above. */
export function parseDateTime(text: string): Date | null {
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => Number(v ?? 0)) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const offset = offsetMinutes(m[8]);
  if (offset === null) return null;
  const millis = Number((m[7] ?? "").padEnd(3, "0").slice(0, 3));
  const d = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0–99 as 1900–1999.
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, millis);
  const time = d.getTime() - offset * 60_000;
  return time >= FIRST && time <= LAST ? new Date(time) : null;
}

const DATE_TIME_ERROR = { constraint_id: "iso8601", constraint: "YYYY-MM-DDThh:mm:ssZ" } as const;

/** A date-time parameter (query or body) as zod: the text kept, refused unless `parseDateTime` accepts it. */
export const dateTimeText = () =>
  z
    .string()
    .max(40) // the longest the rule accepts, nine fraction digits and an offset: 35 characters
    .meta({ format: "date-time" })
    .superRefine((v, ctx) => {
      if (parseDateTime(v) === null)
        ctx.addIssue({
          code: "custom",
          message: "Not an ISO 8601 date or time (RFC 3339) in years 0001–9999.",
          params: DATE_TIME_ERROR,
        });
    });
