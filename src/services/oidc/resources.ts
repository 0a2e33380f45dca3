// Resource servers registered per tenant (docs/openid-connect.md "Resource servers and JWT access
// tokens"): the identifier a client names with `resource=` (RFC 8707 §2), the ACL entries a token
// issued for it may carry, and the format of that token — an RFC 9068 JWT the resource verifies
// offline, or Tessera's opaque token it checks with HEAD /0.1/token. CRUD in the scoping tenant,
// audited and evented like the clients.
import { and, asc, desc, eq, ilike, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { listPage } from "../../db/paging.ts";
import { oidcResources } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { type Collection, collection, type ListParams, searchPattern } from "../../domain/collection.ts";
import { Conflict, NotFound, orAbsent } from "../../domain/errors.ts";
import { recordAudit, resourceAudit } from "../audit/record.ts";
import { publishEvent, routingKey } from "../events.ts";
import { inCallerScope, tenantVisible } from "../identity/visibility.ts";

export const TOKEN_FORMATS = ["jwt", "opaque"] as const;
export type TokenFormat = (typeof TOKEN_FORMATS)[number];

export type ResourceRow = typeof oidcResources.$inferSelect;

export interface ResourceInput {
  identifier: string;
  acl: string[];
  token_format: TokenFormat;
  access_token_lifetime?: number | null;
}

export interface ResourceJson {
  uuid: string;
  tenant_uuid: string;
  identifier: string;
  acl: string[];
  token_format: TokenFormat;
  access_token_lifetime: number | null;
  created_at: string;
}

export const resourceJson = (r: ResourceRow): ResourceJson => ({
  uuid: r.uuid,
  tenant_uuid: r.tenantUuid,
  identifier: r.identifier,
  acl: r.acl,
  token_format: r.tokenFormat as TokenFormat,
  access_token_lifetime: r.accessTokenLifetime,
  created_at: r.createdAt.toISOString(),
});

/**
 * RFC 8707 §2: an absolute URI without a fragment (a query is allowed but discouraged). The problem,
 * or null when the identifier is one.
 */
export function resourceIdentifierProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "not an absolute URI (RFC 8707 §2)";
  }
  if (value.includes("#")) return "a resource identifier has no fragment (RFC 8707 §2)";
  if (url.protocol !== "https:" && url.protocol !== "http:" && url.protocol !== "urn:")
    return "an http, https or urn URI (RFC 8707 §2)";
  return null;
}

function resourceEvent(app: AppContext, tx: DbOrTx, action: "created" | "updated" | "deleted", r: ResourceRow) {
  return publishEvent(app, tx, {
    name: `auth_oidc_resource_${action}`,
    routingKey: routingKey(`auth.oidc.resources.{uuid}.${action}`, { uuid: r.uuid }),
    data: { uuid: r.uuid, tenant_uuid: r.tenantUuid, identifier: r.identifier, token_format: r.tokenFormat },
    tenantUuid: r.tenantUuid,
    userUuid: "*",
    aggregate: `oidc_resource:${r.uuid}`,
  });
}

const target = (r: ResourceRow) => ({ kind: "oidc_resource", uuid: r.uuid, tenantUuid: r.tenantUuid });

const values = (input: ResourceInput) => ({
  identifier: input.identifier,
  acl: [...new Set(input.acl)],
  tokenFormat: input.token_format,
  accessTokenLifetime: input.access_token_lifetime ?? null,
});

async function requireFreeIdentifier(tx: DbOrTx, tenantUuid: string, identifier: string, except?: string) {
  const [taken] = await tx
    .select({ uuid: oidcResources.uuid })
    .from(oidcResources)
    .where(and(eq(oidcResources.tenantUuid, tenantUuid), eq(oidcResources.identifier, identifier)));
  if (taken && taken.uuid !== except)
    throw new Conflict("oidc_resources", {
      identifier: {
        constraint_id: "unique",
        constraint: "identifier",
        message: "A resource with this identifier is already registered in the tenant.",
      },
    });
}

/**
 * Registers a resource in the scoping tenant. Its `acl` is a filter, never a grant: a token for the
 * resource carries the entries of its holder's ACL that the filter covers (acl-scope.ts narrowAcl),
 * so an administrator may name any pattern without widening anyone's access.
 */
export async function createResource(app: AppContext, caller: Caller, input: ResourceInput): Promise<ResourceJson> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  return inTransaction(app, async (tx) => {
    await requireFreeIdentifier(tx, tenantUuid, input.identifier);
    const [row] = await tx
      .insert(oidcResources)
      .values({ ...values(input), tenantUuid })
      .returning();
    await resourceEvent(app, tx, "created", row!);
    await recordAudit(app, tx, caller, resourceAudit("oidc_resource.create", target(row!), null, resourceJson(row!)));
    return resourceJson(row!);
  });
}

/** The resource when it belongs to the caller's scoping tenant or below; else 404. */
export async function requireVisibleResource(
  app: AppContext,
  caller: Caller,
  uuid: string,
  db: DbOrTx = app.db,
): Promise<ResourceRow> {
  const [row] = await db.select().from(oidcResources).where(eq(oidcResources.uuid, uuid));
  if (!row || !(await tenantVisible(app, caller, row.tenantUuid, db))) throw new NotFound("oidc_resources", uuid);
  return row;
}

export async function updateResource(app: AppContext, caller: Caller, uuid: string, input: ResourceInput) {
  await inTransaction(app, async (tx) => {
    const current = await requireVisibleResource(app, caller, uuid, tx);
    await requireFreeIdentifier(tx, current.tenantUuid, input.identifier, uuid);
    const [row] = await tx.update(oidcResources).set(values(input)).where(eq(oidcResources.uuid, uuid)).returning();
    await resourceEvent(app, tx, "updated", row!);
    await recordAudit(
      app,
      tx,
      caller,
      resourceAudit("oidc_resource.update", target(row!), resourceJson(current), resourceJson(row!)),
    );
  });
}

/**
 * Absent or invisible: nothing to delete. Tokens already issued for it stay valid until they
 * expire or are revoked (a JWT is verified offline anyway); new requests naming it get `invalid_target`.
 */
export async function deleteResource(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  await inTransaction(app, async (tx) => {
    const row = await orAbsent(requireVisibleResource(app, caller, uuid, tx));
    if (!row) return;
    await tx.delete(oidcResources).where(eq(oidcResources.uuid, uuid));
    await resourceEvent(app, tx, "deleted", row);
    await recordAudit(app, tx, caller, resourceAudit("oidc_resource.delete", target(row), resourceJson(row), null));
  });
}

export type ResourceFilter = "identifier" | "token_format";
const SORT = {
  identifier: oidcResources.identifier,
  created_at: oidcResources.createdAt,
  uuid: oidcResources.uuid,
} as const;

export async function listResources(
  app: AppContext,
  caller: Caller,
  params: ListParams<ResourceFilter>,
): Promise<Collection<ResourceJson>> {
  const base = inCallerScope(app, caller, params.recurse, oidcResources.tenantUuid);
  const conditions: SQL[] = [];
  const pattern = searchPattern(params.search);
  if (pattern) conditions.push(ilike(oidcResources.identifier, pattern));
  const f = params.filters;
  if (f.identifier !== undefined) conditions.push(eq(oidcResources.identifier, f.identifier));
  if (f.token_format !== undefined) conditions.push(eq(oidcResources.tokenFormat, f.token_format));
  const where = conditions.length ? and(base, ...conditions) : base;
  const column = SORT[(params.order ?? "identifier") as keyof typeof SORT] ?? oidcResources.identifier;
  const page = await listPage(
    app.db,
    oidcResources,
    base,
    where,
    [params.direction === "desc" ? desc(column) : asc(column), asc(oidcResources.uuid)],
    params,
  );
  return collection(page.rows.map(resourceJson), page.filtered, page.total);
}

/** The resource a client of `tenantUuid` names at the token endpoint (RFC 8707 §2), or null. */
export async function resourceOfTenant(
  app: AppContext,
  tenantUuid: string,
  identifier: string,
): Promise<ResourceRow | null> {
  const [row] = await app.db
    .select()
    .from(oidcResources)
    .where(and(eq(oidcResources.tenantUuid, tenantUuid), eq(oidcResources.identifier, identifier)));
  return row ?? null;
}
