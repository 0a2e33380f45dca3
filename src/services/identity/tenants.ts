// Tenants (wazo-auth's tenant API, tenants): a tree under the master tenant; a caller sees its scoping
// tenant and every descendant.
import { and, asc, desc, eq, ilike, inArray, or, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { addresses, sessions, tenantDomains, tenants, users } from "../../db/schema.ts";
import { listPage } from "../../db/paging.ts";
import { afterCommit, inTransaction } from "../../db/tx.ts";
import { realmsChanged } from "../integrations/home-realm.ts";
import type { Caller } from "../../domain/caller.ts";
import { collection, searchPattern, type Collection, type ListParams } from "../../domain/collection.ts";
import { Conflict, Forbidden, invalidField, NotFound } from "../../domain/errors.ts";
import { publishEvent, routingKey, type BusEvent } from "../events.ts";
import { changesOf, recordAudit, type AuditEntry } from "../audit/record.ts";
import { authenticationMethods } from "../auth/identity-providers.ts";
import { setupTenantGroups } from "./policy-sync.ts";
import { revokeSessions } from "../auth/sessions.ts";
import { generateSlug } from "./slugs.ts";
import { ancestorUuids, inSubtree, subtreeCount } from "./tenant-tree.ts";
import { tenantVisible } from "./visibility.ts";
import {
  passwordPolicyField,
  passwordPolicyJson,
  refuseWeakeningMove,
  setTenantPasswordPolicy,
  settingsBeforeMove,
  tenantPasswordPolicyJson,
  type PasswordPolicyInput,
  type PasswordPolicyJson,
} from "./tenant-password-policy.ts";

export interface AddressInput {
  line_1?: string | null;
  line_2?: string | null;
  city?: string | null;
  state?: string | null;
  country?: string | null;
  zip_code?: string | null;
}

export interface TenantInput {
  uuid?: string;
  name?: string | null;
  slug?: string;
  contact?: string | null;
  phone?: string | null;
  default_authentication_method?: string;
  domain_names?: string[];
  address?: AddressInput | null;
  /** Omitted: unchanged (even by PUT); null: inherited. */
  password_policy?: PasswordPolicyInput | null;
}

export interface TenantJson {
  uuid: string;
  parent_uuid: string;
  name: string | null;
  slug: string;
  contact: string | null;
  phone: string | null;
  default_authentication_method: string;
  domain_names: string[];
  address: Required<AddressInput>;
  password_policy: PasswordPolicyJson;
}

type TenantRow = typeof tenants.$inferSelect;
type AddressRow = typeof addresses.$inferSelect;
const ADDRESS_KEYS = ["line_1", "line_2", "city", "state", "country", "zip_code"] as const;

function addressJson(row: AddressRow | undefined): Required<AddressInput> {
  return {
    line_1: row?.line1 ?? null,
    line_2: row?.line2 ?? null,
    city: row?.city ?? null,
    state: row?.state ?? null,
    country: row?.country ?? null,
    zip_code: row?.zipCode ?? null,
  };
}

function tenantJsonOf(
  t: TenantRow,
  domainNames: string[],
  address: AddressRow | undefined,
  passwordPolicy: PasswordPolicyJson,
): TenantJson {
  return {
    uuid: t.uuid,
    parent_uuid: t.parentUuid,
    name: t.name,
    slug: t.slug,
    contact: t.contactUuid,
    phone: t.phone,
    default_authentication_method: t.defaultAuthenticationMethod,
    domain_names: domainNames,
    address: addressJson(address),
    password_policy: passwordPolicy,
  };
}

/**
 * The domain names and address of each listed tenant as JSON text, computed in the page's own
 * query (a page of 100,000 tenants would not fit in a parameter list of their uuids).
 */
const domainsField = sql<string>`(select coalesce(json_agg(d.name order by d.name), '[]')::text from auth_tenant_domain d where d.tenant_uuid = "auth_tenant"."uuid")`;
const addressField = sql<
  string | null
>`(select row_to_json(a)::text from auth_address a where a.tenant_uuid = "auth_tenant"."uuid" limit 1)`;

function addressOf(text: string | null): AddressRow | undefined {
  if (!text) return undefined;
  const a = JSON.parse(text) as Record<string, string | null>;
  return {
    line1: a.line_1,
    line2: a.line_2,
    city: a.city,
    state: a.state,
    country: a.country,
    zipCode: a.zip_code,
  } as AddressRow;
}

async function tenantJsonByUuid(app: AppContext, db: DbOrTx, uuid: string): Promise<TenantJson> {
  const [row] = await db.select().from(tenants).where(eq(tenants.uuid, uuid));
  if (!row) throw new NotFound("tenants", uuid);
  const [domains, [address], passwordPolicy] = await Promise.all([
    db
      .select({ name: tenantDomains.name })
      .from(tenantDomains)
      .where(eq(tenantDomains.tenantUuid, uuid))
      .orderBy(asc(tenantDomains.name)),
    db.select().from(addresses).where(eq(addresses.tenantUuid, uuid)),
    tenantPasswordPolicyJson(app, db, uuid),
  ]);
  return tenantJsonOf(
    row,
    domains.map((d) => d.name),
    address,
    passwordPolicy,
  );
}

export type TenantFilter = "uuid" | "uuids" | "name" | "slug" | "domain_name";
const SORT = { name: tenants.name, slug: tenants.slug } as const;

export async function listTenants(
  app: AppContext,
  caller: Caller,
  params: ListParams<TenantFilter>,
  uuids: string[] | undefined,
): Promise<Collection<TenantJson>> {
  const scope = caller.tenantUuid ? inSubtree(tenants.uuid, caller.tenantUuid, app.topTenantUuid) : sql`false`;
  const conditions: SQL[] = [scope];
  const pattern = searchPattern(params.search);
  const hasDomain = (cond: SQL) =>
    sql`exists (select 1 from ${tenantDomains} d where d.tenant_uuid = ${tenants.uuid} and ${cond})`;
  if (pattern)
    conditions.push(
      or(ilike(tenants.name, pattern), ilike(tenants.slug, pattern), hasDomain(sql`d.name ilike ${pattern}`))!,
    );
  const f = params.filters;
  if (f.uuid !== undefined) conditions.push(eq(tenants.uuid, f.uuid));
  if (uuids !== undefined) conditions.push(inArray(tenants.uuid, uuids.length ? uuids : [""]));
  if (f.name !== undefined) conditions.push(eq(tenants.name, f.name));
  if (f.slug !== undefined) conditions.push(eq(tenants.slug, f.slug));
  if (f.domain_name !== undefined) conditions.push(hasDomain(sql`d.name = ${f.domain_name}`));
  // Nothing narrows the scope: `where` is `scope` itself, so listPage counts it once and walks the
  // order's index (auth_tenant_name_uuid_idx) instead of gathering every tenant to count them again.
  const where = conditions.length === 1 ? scope : and(...conditions);
  const column = SORT[(params.order ?? "name") as keyof typeof SORT] ?? tenants.name;
  const order = [params.direction === "desc" ? desc(column) : asc(column), asc(tenants.uuid)];
  const page = await listPage(app.db, tenants, scope, where, order, params, {
    total: caller.tenantUuid ? subtreeCount(caller.tenantUuid, app.topTenantUuid) : sql<number>`0`,
    fields: { domains: domainsField, address: addressField, passwordPolicy: passwordPolicyField },
  });
  const serviceMin = app.config.password_policy.min_length;
  return collection(
    page.rows.map((r) =>
      tenantJsonOf(
        r,
        JSON.parse(r.domains) as string[],
        addressOf(r.address),
        passwordPolicyJson(serviceMin, r.uuid, JSON.parse(r.passwordPolicy)),
      ),
    ),
    page.filtered,
    page.total,
  );
}

/** The tenant when the caller may see it (its scoping tenant or below), else 404. */
export async function requireVisibleTenant(
  app: AppContext,
  caller: Caller,
  uuid: string,
  db: DbOrTx = app.db,
): Promise<TenantJson> {
  if (!(await tenantVisible(app, caller, uuid, db))) throw new NotFound("tenants", uuid);
  return tenantJsonByUuid(app, db, uuid);
}

function checkAuthenticationMethod(app: AppContext, method: string | undefined): string {
  const value = method ?? "native";
  const choices = authenticationMethods(app);
  if (!choices.includes(value)) {
    throw invalidField(
      "tenants",
      "default_authentication_method",
      "enum",
      { choices },
      `Invalid authentication method ${value}`,
    );
  }
  return value;
}

async function checkContact(
  app: AppContext,
  caller: Caller,
  db: DbOrTx,
  contact: string | null | undefined,
): Promise<string | null> {
  if (!contact) return null;
  const [user] = await db.select({ tenantUuid: users.tenantUuid }).from(users).where(eq(users.uuid, contact));
  if (!user || !(await tenantVisible(app, caller, user.tenantUuid, db))) throw new NotFound("users", contact);
  return contact;
}

/** Domain names are globally unique; `keepTenant` may already hold them. */
async function checkDomains(db: DbOrTx, names: string[], keepTenant?: string): Promise<void> {
  if (names.length === 0) return;
  const used = await db
    .select({ name: tenantDomains.name, tenantUuid: tenantDomains.tenantUuid })
    .from(tenantDomains)
    .where(inArray(tenantDomains.name, names));
  const clash = used.find((d) => d.tenantUuid !== keepTenant);
  if (clash)
    throw new Conflict("tenants", {
      domain_names: {
        constraint_id: "unique",
        constraint: clash.name,
        message: `The domain name "${clash.name}" is already used`,
      },
    });
}

/** Replaces the tenant's address (`fresh`: a new tenant, with none to remove); returns the row written. */
async function writeAddress(
  db: DbOrTx,
  tenantUuid: string,
  address: AddressInput | null | undefined,
  fresh = false,
): Promise<AddressRow | undefined> {
  if (!fresh) await db.delete(addresses).where(eq(addresses.tenantUuid, tenantUuid));
  if (!address || ADDRESS_KEYS.every((k) => address[k] == null)) return undefined;
  const [row] = await db
    .insert(addresses)
    .values({
      tenantUuid,
      line1: address.line_1 ?? null,
      line2: address.line_2 ?? null,
      city: address.city ?? null,
      state: address.state ?? null,
      country: address.country ?? null,
      zipCode: address.zip_code ?? null,
    })
    .returning();
  return row;
}

const normaliseDomains = (names: string[] | undefined) =>
  [...new Set((names ?? []).map((n) => n.toLowerCase()))].sort();

function tenantEvent(
  kind: "created" | "updated" | "deleted",
  name: string,
  data: Record<string, unknown>,
  uuid: string,
): BusEvent {
  return {
    name,
    routingKey: routingKey(`auth.tenants.{tenant_uuid}.${kind}`, { tenant_uuid: uuid }),
    data,
    tenantUuid: uuid,
    userUuid: "*",
    aggregate: `tenant:${uuid}`,
  };
}

/** Creates a tenant under `parentUuid` in the caller's transaction (also used by registration). */
export async function createTenant(
  app: AppContext,
  tx: DbOrTx,
  caller: Caller | null,
  parentUuid: string,
  input: TenantInput,
): Promise<TenantJson> {
  const method = checkAuthenticationMethod(app, input.default_authentication_method);
  if (input.uuid) {
    if (input.uuid === parentUuid)
      throw new Forbidden(
        "tenants",
        "A master tenant already exists",
        { parent_uuid: { constraint_id: "unique", message: "A master tenant already exists" } },
        "conflict",
      );
    const [dup] = await tx.select({ uuid: tenants.uuid }).from(tenants).where(eq(tenants.uuid, input.uuid));
    if (dup)
      throw new Conflict("tenants", {
        uuid: { constraint_id: "unique", constraint: input.uuid, message: "A tenant with this uuid already exists" },
      });
  }
  const contact = caller ? await checkContact(app, caller, tx, input.contact) : null;
  const domains = normaliseDomains(input.domain_names);
  await checkDomains(tx, domains);
  const slugTaken = async (slug: string) =>
    (await tx.select({ uuid: tenants.uuid }).from(tenants).where(eq(tenants.slug, slug))).length > 0;
  let slug = input.slug;
  if (slug !== undefined && (await slugTaken(slug)))
    throw new Conflict("tenants", {
      slug: { constraint_id: "unique", constraint: slug, message: `The slug "${slug}" is already used` },
    });
  slug ??= await generateSlug(input.name, /[^a-zA-Z0-9_]/g, 10, slugTaken);
  const [row] = await tx
    .insert(tenants)
    .values({
      ...(input.uuid ? { uuid: input.uuid } : {}),
      name: input.name ?? null,
      slug,
      contactUuid: contact,
      phone: input.phone ?? null,
      parentUuid,
      defaultAuthenticationMethod: method,
    })
    .returning();
  const uuid = row!.uuid;
  if (domains.length) {
    await tx.insert(tenantDomains).values(domains.map((name) => ({ tenantUuid: uuid, name })));
    await realmsChanged(app, tx); // where the login page sends these domains' users (home-realm.ts)
  }
  const address = await writeAddress(tx, uuid, input.address, true);
  if (caller && input.password_policy) await setTenantPasswordPolicy(app, tx, caller, uuid, input.password_policy);
  await setupTenantGroups(app, tx, uuid);
  afterCommit(tx, () => app.tenantTree.created(uuid, parentUuid));
  // Built from what was just written (each round trip saved counts at size: issue 29's < 10 ms).
  const json = tenantJsonOf(row!, domains, address, await tenantPasswordPolicyJson(app, tx, uuid));
  await publishEvent(
    app,
    tx,
    tenantEvent("created", "auth_tenant_added", { uuid, name: json.name, slug, domain_names: json.domain_names }, uuid),
  );
  return json;
}

export async function createTenantAsCaller(app: AppContext, caller: Caller, input: TenantInput): Promise<TenantJson> {
  if (!caller.tenantUuid) throw new NotFound("tenants");
  return inTransaction(app, async (tx) => {
    const tenant = await createTenant(app, tx, caller, caller.tenantUuid!, input);
    await recordAudit(app, tx, caller, tenantAudit("tenant.create", tenant.uuid, null, asRecord(tenant)));
    return tenant;
  });
}

/** An entry about a tenant, comparing the fields an administrator sets (JSON shapes, as the API shows them). */
export function tenantAudit(
  action: string,
  uuid: string,
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): AuditEntry {
  const fields = [
    "name",
    "slug",
    "phone",
    "contact",
    "parent_uuid",
    "domain_names",
    "address",
    "default_authentication_method",
    "password_policy",
  ];
  return { action, target: { kind: "tenant", uuid, tenantUuid: uuid }, changes: changesOf(before, after, fields) };
}

/** Full replacement (§16 item 5): omitted fields go back to their defaults; the slug never changes. */
export async function updateTenant(app: AppContext, caller: Caller, uuid: string, input: TenantInput): Promise<void> {
  const method = checkAuthenticationMethod(app, input.default_authentication_method);
  await inTransaction(app, async (tx) => {
    const before = await requireVisibleTenant(app, caller, uuid, tx);
    const contact = await checkContact(app, caller, tx, input.contact);
    const domains = normaliseDomains(input.domain_names);
    await checkDomains(tx, domains, uuid);
    await tx
      .update(tenants)
      .set({
        name: input.name ?? null,
        phone: input.phone ?? null,
        contactUuid: contact,
        defaultAuthenticationMethod: method,
      })
      .where(eq(tenants.uuid, uuid));
    // Domains that stay keep their uuid (SAML configs refer to them).
    const existing = await tx.select().from(tenantDomains).where(eq(tenantDomains.tenantUuid, uuid));
    const gone = existing.filter((d) => !domains.includes(d.name)).map((d) => d.uuid);
    if (gone.length) await tx.delete(tenantDomains).where(inArray(tenantDomains.uuid, gone));
    const added = domains.filter((n) => !existing.some((d) => d.name === n));
    if (added.length) await tx.insert(tenantDomains).values(added.map((name) => ({ tenantUuid: uuid, name })));
    if (gone.length || added.length) await realmsChanged(app, tx);
    await writeAddress(tx, uuid, input.address);
    if (input.password_policy !== undefined)
      await setTenantPasswordPolicy(app, tx, caller, uuid, input.password_policy);
    const after = await tenantJsonByUuid(app, tx, uuid);
    await recordAudit(app, tx, caller, tenantAudit("tenant.update", uuid, asRecord(before), asRecord(after)));
    await publishEvent(
      app,
      tx,
      tenantEvent("updated", "auth_tenant_updated", { uuid, name: input.name ?? null }, uuid),
    );
  });
}

/** Deletes a visible tenant without children; its sessions end first (events, token cache). */
export async function deleteTenant(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  if (uuid === caller.tenantUuid || uuid === app.topTenantUuid) {
    throw new Forbidden(
      "tenants",
      "A tenant cannot delete itself",
      { tenant_uuid: uuid },
      "deleting-own-tenant-forbidden",
    );
  }
  const mark = app.tenantTree.mark();
  await inTransaction(app, async (tx) => {
    if (!(await tenantVisible(app, caller, uuid, tx))) return; // absent or not ours: nothing to do (D4 of docs/wazo-auth-differences.md)
    const [child] = await tx
      .select({ uuid: tenants.uuid })
      .from(tenants)
      .where(and(eq(tenants.parentUuid, uuid), sql`${tenants.uuid} <> ${tenants.parentUuid}`))
      .limit(1);
    if (child)
      throw new Conflict(
        "tenants",
        {
          uuid: {
            constraint_id: "no_children",
            constraint: child.uuid,
            message: "The tenant has sub-tenants: delete or move them first",
          },
        },
        "Tenant has children",
        uuid,
      );
    await revokeSessions(
      app,
      tx,
      or(
        eq(sessions.tenantUuid, uuid),
        sql`${sessions.uuid} in (select t.session_uuid from auth_token t join auth_user u on u.uuid = t.auth_id where u.tenant_uuid = ${uuid})`,
      )!,
    );
    const before = await tenantJsonByUuid(app, tx, uuid);
    await tx.delete(tenants).where(eq(tenants.uuid, uuid));
    await realmsChanged(app, tx); // its domains and providers went with it
    await recordAudit(app, tx, caller, tenantAudit("tenant.delete", uuid, asRecord(before), null));
    afterCommit(tx, () => app.tenantTree.changed(uuid, null, mark));
    await publishEvent(app, tx, tenantEvent("deleted", "auth_tenant_deleted", { uuid }, uuid));
  });
}

export async function tenantDomainsOf(
  app: AppContext,
  caller: Caller,
  uuid: string,
): Promise<{ total: number; items: Array<{ name: string; uuid: string }> }> {
  if (!(await tenantVisible(app, caller, uuid))) throw new NotFound("tenants", uuid);
  const rows = await app.db
    .select()
    .from(tenantDomains)
    .where(eq(tenantDomains.tenantUuid, uuid))
    .orderBy(asc(tenantDomains.name));
  return { total: rows.length, items: rows.map((d) => ({ name: d.name, uuid: d.uuid })) };
}

/** Moves a tenant under another visible tenant; never under itself or its own descendants. */
export async function setTenantParent(
  app: AppContext,
  caller: Caller,
  uuid: string,
  parentUuid: string,
): Promise<void> {
  const mark = app.tenantTree.mark();
  await inTransaction(app, async (tx) => {
    if (!(await tenantVisible(app, caller, uuid, tx))) throw new NotFound("tenants", uuid);
    if (!(await tenantVisible(app, caller, parentUuid, tx))) throw new NotFound("tenants", parentUuid);
    if (uuid === app.topTenantUuid || parentUuid === uuid || (await ancestorUuids(tx, parentUuid)).includes(uuid)) {
      throw new Conflict(
        "tenants",
        { uuid, parent_uuid: parentUuid },
        "A tenant cannot be moved under itself or its descendants",
        uuid,
      );
    }
    const [old] = await tx.select({ parentUuid: tenants.parentUuid }).from(tenants).where(eq(tenants.uuid, uuid));
    const policies = await settingsBeforeMove(tx, uuid);
    await tx.update(tenants).set({ parentUuid }).where(eq(tenants.uuid, uuid));
    await refuseWeakeningMove(app, tx, caller, uuid, policies);
    await recordAudit(app, tx, caller, {
      action: "tenant.move",
      target: { kind: "tenant", uuid, tenantUuid: uuid },
      changes: [{ field: "parent_uuid", old: old?.parentUuid ?? null, new: parentUuid }],
    });
    afterCommit(tx, () => app.tenantTree.changed(uuid, parentUuid, mark));
  });
}

const asRecord = (t: TenantJson) => t as unknown as Record<string, unknown>;
