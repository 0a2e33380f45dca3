// List parameters (docs/api.md, wazo-auth's list parameters) and the `{items, filtered, total}`
// envelope. Each list route builds its query schema with `listQuery`, so an unknown `order` or a
// bad `limit` is a 400 with details, never a 500.
import { z } from "zod";
import { CAPS, text } from "./strings.ts";
import { boolField, intField } from "./validate.ts";
import { dateTimeText } from "./datetime.ts";

export interface ListParams<F extends string = string> {
  limit: number | undefined;
  offset: number;
  order: string | undefined;
  direction: "asc" | "desc";
  search: string | undefined;
  recurse: boolean;
  /** Strict (exact-match) filters given in the query string. */
  filters: Partial<Record<F, string>>;
}

export interface ListQueryOptions<F extends string> {
  /** Sortable columns (API names). */
  order: readonly string[];
  defaultOrder?: string;
  /** Strict filters accepted as query parameters. */
  filters?: readonly F[];
  /** Those of `filters` that are dates or times: refused (400) unless datetime.ts's rule accepts them. */
  dateTimeFilters?: readonly F[];
}

/** Largest `limit` and `offset`: any database integer holds it. */
export const MAX_PAGING = 2_147_483_647;

/** zod schema of a list endpoint's query string, producing `ListParams`. Unknown keys are ignored. */
export function listQuery<F extends string = never>(opts: ListQueryOptions<F>) {
  const orderSchema = opts.order.length > 0 ? z.enum(opts.order as [string, ...string[]]) : z.never();
  return z
    .object({
      limit: intField(0, MAX_PAGING).optional(),
      offset: intField(0, MAX_PAGING).optional(),
      order: orderSchema.optional(),
      direction: z.enum(["asc", "desc"]).optional(),
      search: text(CAPS.search).optional(),
      recurse: boolField().optional(),
      // Declared so the OpenAPI document lists them; a repeated filter counts by its first value.
      ...Object.fromEntries(
        (opts.filters ?? []).map((f) => {
          const value = opts.dateTimeFilters?.includes(f) ? dateTimeText() : text(CAPS.queryValue);
          return [f, z.union([value, z.array(value)]).optional()];
        }),
      ),
    })
    .catchall(z.unknown())
    .transform((q): ListParams<F> => {
      const filters: Partial<Record<F, string>> = {};
      for (const f of opts.filters ?? []) {
        const v = q[f];
        if (typeof v === "string") filters[f] = v;
        else if (Array.isArray(v) && typeof v[0] === "string") filters[f] = v[0];
      }
      return {
        limit: q.limit as number | undefined,
        offset: (q.offset as number | undefined) ?? 0,
        order: (q.order as string | undefined) ?? opts.defaultOrder,
        direction: (q.direction as "asc" | "desc" | undefined) ?? "asc",
        search: q.search as string | undefined,
        recurse: (q.recurse as boolean | undefined) ?? false,
        filters,
      };
    });
}

/** `search` as an ILIKE pattern: words split on spaces, joined as `%w1%w2%` (empty → match all). */
export function searchPattern(search: string | undefined): string | null {
  if (search === undefined) return null;
  const words = search
    .split(" ")
    .filter(Boolean)
    .map((w) => w.replace(/[\\%_]/g, (c) => `\\${c}`));
  return `%${words.join("%")}${words.length ? "%" : ""}`;
}

export interface Collection<T> {
  items: T[];
  filtered: number;
  total: number;
}

export function collection<T>(items: T[], filtered: number, total: number): Collection<T> {
  return { items, filtered, total };
}
