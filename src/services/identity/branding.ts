// A tenant's branding of the hosted pages (issue 43): a product name, a logo and three colours,
// set by the tenant's administrators (`GET`/`PUT /0.1/tenants/{uuid}/branding`, the console). What
// it can never do is weaken the pages' security: the colours are `#rrggbb` only (no CSS reaches the
// page but those values, inside the page's own nonce-tagged style), the logo is an inline PNG,
// JPEG or WebP image (the page loads nothing from elsewhere; its CSP gains `img-src data:` only),
// and the forms, their CSRF field and the headers stay the provider's. The colours are checked on
// save for WCAG 2.1 AA contrast (§1.4.3, 4.5:1 for text): the text on the background, the button's
// white text on the primary colour, and the primary colour as link text on the white card.
// Pages read a copy kept in memory, reloaded when older than a few seconds (brandingFor). A tenant
// without a branding of its own wears its nearest ancestor's: a reseller brands once for every
// customer tenant below it.
import { eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { tenantBranding } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { InvalidData } from "../../domain/errors.ts";
import { changesOf, recordAudit } from "../audit/record.ts";
import { publishEvent, routingKey } from "../events.ts";
import { requireVisibleTenant } from "./tenants.ts";

export interface BrandingJson {
  product_name: string | null;
  logo: string | null;
  primary_color: string | null;
  background_color: string | null;
  text_color: string | null;
}

const EMPTY: BrandingJson = {
  product_name: null,
  logo: null,
  primary_color: null,
  background_color: null,
  text_color: null,
};

/** The built-in layout's colours: what a colour left unset stands for in the contrast checks. */
export const DEFAULT_COLORS = { primary: "#0b57d0", background: "#f4f5f7", text: "#1a1a1a", card: "#ffffff" };
export const MAX_LOGO_BYTES = 48 * 1024;
const LOGO = /^data:image\/(png|jpeg|webp);base64,([A-Za-z0-9+/]+={0,2})$/;
const MAGIC: Record<string, (b: Buffer) => boolean> = {
  png: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  jpeg: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  webp: (b) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP",
};

/** WCAG 2.1 relative luminance of `#rrggbb`. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

/** WCAG 2.1 contrast ratio of two `#rrggbb` colours (1 to 21). */
export function contrastRatio(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

const AA = 4.5;

/** Refusals of a branding: a field → its problem (the one 400 body's `details`). */
function problems(b: BrandingJson): Record<string, { constraint_id: string; constraint: unknown; message: string }> {
  const out: Record<string, { constraint_id: string; constraint: unknown; message: string }> = {};
  if (b.logo !== null) {
    const m = LOGO.exec(b.logo);
    const bytes = m ? Buffer.from(m[2]!, "base64") : null;
    if (!m || !bytes || bytes.length > MAX_LOGO_BYTES || !MAGIC[m[1]!]!(bytes))
      out.logo = {
        constraint_id: "image",
        constraint: { types: ["image/png", "image/jpeg", "image/webp"], max_bytes: MAX_LOGO_BYTES },
        message: `A data: URI of a PNG, JPEG or WebP image of at most ${MAX_LOGO_BYTES} bytes`,
      };
  }
  const primary = b.primary_color ?? DEFAULT_COLORS.primary;
  const background = b.background_color ?? DEFAULT_COLORS.background;
  const text = b.text_color ?? DEFAULT_COLORS.text;
  const check = (field: string, fg: string, bg: string, what: string) => {
    const ratio = contrastRatio(fg, bg);
    if (ratio < AA && !out[field])
      out[field] = {
        constraint_id: "contrast",
        constraint: { min_ratio: AA, ratio: Math.round(ratio * 100) / 100, against: bg },
        message: `Contrast ${ratio.toFixed(2)}:1 ${what}; WCAG AA needs ${AA}:1`,
      };
  };
  check("text_color", text, background, "between the text and the background");
  check("text_color", text, DEFAULT_COLORS.card, "between the text and the white card");
  check("primary_color", "#ffffff", primary, "between the buttons' white text and the primary colour");
  check("primary_color", primary, DEFAULT_COLORS.card, "between links in the primary colour and the white card");
  check("primary_color", primary, background, "between links in the primary colour and the background");
  return out;
}

const rowJson = (row: typeof tenantBranding.$inferSelect | undefined): BrandingJson =>
  row
    ? {
        product_name: row.productName,
        logo: row.logo,
        primary_color: row.primaryColor,
        background_color: row.backgroundColor,
        text_color: row.textColor,
      }
    : { ...EMPTY };

export async function getBranding(app: AppContext, caller: Caller, tenantUuid: string): Promise<BrandingJson> {
  await requireVisibleTenant(app, caller, tenantUuid);
  const [row] = await app.db.select().from(tenantBranding).where(eq(tenantBranding.tenantUuid, tenantUuid));
  return rowJson(row);
}

/** Replaces the tenant's branding (all null: none); 400 naming the field on a bad logo or a contrast below AA. */
export async function setBranding(
  app: AppContext,
  caller: Caller,
  tenantUuid: string,
  input: BrandingJson,
): Promise<BrandingJson> {
  const refused = problems(input);
  if (Object.keys(refused).length) throw new InvalidData("tenants", refused);
  const saved = await inTransaction(app, async (tx) => {
    await requireVisibleTenant(app, caller, tenantUuid, tx);
    const [before] = await tx
      .select()
      .from(tenantBranding)
      .where(eq(tenantBranding.tenantUuid, tenantUuid))
      .for("update");
    const values = {
      productName: input.product_name,
      logo: input.logo,
      primaryColor: input.primary_color,
      backgroundColor: input.background_color,
      textColor: input.text_color,
      updatedAt: new Date(),
    };
    const [row] = await tx
      .insert(tenantBranding)
      .values({ tenantUuid, ...values })
      .onConflictDoUpdate({ target: tenantBranding.tenantUuid, set: values })
      .returning();
    // The logo by its size: an audit entry is no place for 48 KiB of image.
    const shown = (b: BrandingJson) => ({ ...b, logo: b.logo === null ? null : `${b.logo.length} characters` });
    const old = shown(rowJson(before));
    const now = shown(rowJson(row));
    await recordAudit(app, tx, caller, {
      action: "tenant.branding.update",
      target: { kind: "tenant", uuid: tenantUuid, tenantUuid },
      changes: changesOf(old, now, Object.keys(now)),
    });
    await publishEvent(app, tx, {
      name: "auth_tenant_branding_updated",
      routingKey: routingKey("auth.tenants.{tenant_uuid}.branding.updated", { tenant_uuid: tenantUuid }),
      data: { tenant_uuid: tenantUuid },
      tenantUuid,
      userUuid: "*",
      aggregate: `tenant:${tenantUuid}`,
    });
    return rowJson(row);
  });
  forget(app);
  return saved;
}

/** What a page shows: the tenant's branding, from memory (see brandingFresh). */
export interface PageBranding {
  productName: string | null;
  logo: string | null;
  primary: string | null;
  background: string | null;
  text: string | null;
}

const MAX_AGE_MS = 5_000;
const cache = new WeakMap<
  AppContext,
  { at: number; byTenant: Map<string, PageBranding>; parents: ReadonlyMap<string, string> }
>();

function forget(app: AppContext): void {
  cache.delete(app);
}

/**
 * Reloads the brandings when the copy in memory is older than a few seconds (every instance sees
 * another's change within that time); the pages' handlers call it before they render.
 */
export async function brandingFresh(app: AppContext): Promise<void> {
  const held = cache.get(app);
  // The tenant tree as the token check knows it (in memory, kept current by notices), so a tenant
  // created or moved a moment ago inherits at once; while that copy cannot be trusted, the tree is
  // read with the brandings, no more often.
  const current = app.tenantTree.parentMapNow();
  if (held && Date.now() - held.at < MAX_AGE_MS) {
    if (current) held.parents = current;
    return;
  }
  const parents = current ?? (await app.tenantTree.parentMap(app.db));
  const rows = await app.db.select().from(tenantBranding);
  const byTenant = new Map<string, PageBranding>();
  for (const r of rows)
    byTenant.set(r.tenantUuid, {
      productName: r.productName,
      logo: r.logo,
      primary: r.primaryColor,
      background: r.backgroundColor,
      text: r.textColor,
    });
  cache.set(app, { at: Date.now(), byTenant, parents });
}

/**
 * The branding a tenant's pages wear, as last loaded: its own, else its nearest ancestor's (null:
 * none up to the master tenant, or not loaded yet). A tenant whose administrators saved an empty
 * branding has one of its own: the stock look, whatever its ancestors'.
 */
export function brandingFor(app: AppContext, tenantUuid: string | undefined): PageBranding | null {
  const held = cache.get(app);
  if (!tenantUuid || !held) return null;
  for (let current = tenantUuid, hops = 0; hops <= held.parents.size; hops++) {
    const own = held.byTenant.get(current);
    if (own) return own;
    const up = held.parents.get(current);
    if (up === undefined || up === current) return null; // the master tenant is its own parent
    current = up;
  }
  return null;
}
