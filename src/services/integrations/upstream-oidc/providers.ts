// Upstream OpenID Connect providers of a tenant (`/0.1/backends/oidc`, docs/federation.md): CRUD in the
// scoping tenant, tenant-isolated (services/identity/visibility.ts), audited and evented like every
// resource. The issuer is a URL a tenant administrator chose: refused at once when the outbound policy
// refuses it (400), and its discovery document fetched through the guard before anything is stored, so a
// provider that cannot be reached is a clear 400 at creation rather than a failure at sign-in.
import { randomUUID } from "node:crypto";
import { and, asc, desc, eq, ilike, type SQL } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import type { DbOrTx } from "../../../db/index.ts";
import { listPage } from "../../../db/paging.ts";
import { upstreamOidcProviders } from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import type { Caller } from "../../../domain/caller.ts";
import { collection, searchPattern, type Collection, type ListParams } from "../../../domain/collection.ts";
import { Conflict, InvalidData, NotFound, orAbsent, ServiceUnavailable, type Details } from "../../../domain/errors.ts";
import { recordAudit, resourceAudit, secretChange } from "../../audit/record.ts";
import { publishEvent, routingKey } from "../../events.ts";
import { inCallerScope, tenantVisible } from "../../identity/visibility.ts";
import { urlRefusal } from "../../outbound/fetch.ts";
import { seal, unseal } from "../../secrets/sealing.ts";
import { realmsChanged } from "../home-realm.ts";
import { GITHUB_SCOPES, GITHUB_BASE_URL, githubEndpoints } from "./github-endpoints.ts";
import { forgetUpstream, policyOf, UpstreamUnavailable, upstreamMetadata } from "./discovery.ts";

export type ProviderRow = typeof upstreamOidcProviders.$inferSelect;
export type Provisioning = "create" | "link" | "off";
export type Preset = "oidc" | "google" | "entra" | "github";
export const PRESETS: readonly Preset[] = ["oidc", "google", "entra", "github"];
export const PROVISIONING: readonly Provisioning[] = ["create", "link", "off"];
const RESOURCE = "backends_oidc";

/** Which upstream claim fills which user field (docs/federation.md "Claims"). */
export interface ClaimMapping {
  username: string;
  email: string;
  firstname: string;
  lastname: string;
  /** The language of a provisioned user (OIDC Core §5.1 `locale`). */
  locale: string;
}
export const DEFAULT_CLAIM_MAPPING: ClaimMapping = {
  username: "preferred_username",
  email: "email",
  firstname: "given_name",
  lastname: "family_name",
  locale: "locale",
};
export const DEFAULT_SCOPES = ["openid", "email", "profile"];

/** What a preset fixes when it is chosen: the issuer people mean by its name. */
const PRESET_ISSUERS: Partial<Record<Preset, string>> = {
  google: "https://accounts.google.com",
  entra: "https://login.microsoftonline.com/common/v2.0",
  // Not an issuer: GitHub's base URL (an Enterprise Server's own), from which github.ts derives its endpoints.
  github: GITHUB_BASE_URL,
};

export interface ProviderInput {
  name: string;
  display_name: string;
  preset?: Preset;
  issuer?: string;
  client_id: string;
  /** Required at creation; absent on update: kept. */
  client_secret?: string;
  scopes?: string[];
  native_client_ids?: string[];
  provisioning?: Provisioning;
  claim_mapping?: Partial<ClaimMapping>;
  /** Logging out at Tessera logs out at the provider too (docs/federation.md "Logout"). */
  upstream_logout?: boolean;
  /** The provider's `amr` may meet the tenant's MFA requirement (docs/federation.md "Multi-factor"; amr.ts). */
  trust_amr?: boolean;
}

export interface ProviderJson {
  uuid: string;
  tenant_uuid: string;
  name: string;
  display_name: string;
  preset: string;
  issuer: string;
  client_id: string;
  scopes: string[];
  native_client_ids: string[];
  provisioning: string;
  claim_mapping: ClaimMapping;
  /** What to register at the upstream provider as this provider's redirect URI. */
  redirect_uri: string;
  upstream_logout: boolean;
  /** What to register as a post-logout redirect URI (RP-Initiated Logout 1.0 §3), for `upstream_logout`. */
  post_logout_redirect_uri: string;
  /** What to register as the back-channel logout URI (Back-Channel Logout 1.0 §2.2). */
  backchannel_logout_uri: string;
  trust_amr: boolean;
}

/** The redirect URI of a provider under Tessera's issuer (the page route web/upstream-sign-in.ts answers it). */
export const redirectUriOf = (tesseraIssuer: string, providerUuid: string) =>
  `${tesseraIssuer}/upstream/${providerUuid}/callback`;

/** Where the provider sends the browser back after logging it out (web/upstream-logout.ts). */
export const postLogoutRedirectUriOf = (tesseraIssuer: string, providerUuid: string) =>
  `${tesseraIssuer}/upstream/${providerUuid}/logged-out`;

/** Where the provider posts its logout tokens (oauth/upstream-backchannel.ts). */
export const backchannelLogoutUriOf = (tesseraIssuer: string, providerUuid: string) =>
  `${tesseraIssuer}/upstream/${providerUuid}/backchannel-logout`;

export function providerJson(row: ProviderRow, tesseraIssuer: string): ProviderJson {
  return {
    uuid: row.uuid,
    tenant_uuid: row.tenantUuid,
    name: row.name,
    display_name: row.displayName,
    preset: row.preset,
    issuer: row.issuer,
    client_id: row.clientId,
    scopes: row.scopes,
    native_client_ids: row.nativeClientIds,
    provisioning: row.provisioning,
    claim_mapping: { ...DEFAULT_CLAIM_MAPPING, ...row.claimMapping },
    redirect_uri: redirectUriOf(tesseraIssuer, row.uuid),
    upstream_logout: row.upstreamLogout,
    post_logout_redirect_uri: postLogoutRedirectUriOf(tesseraIssuer, row.uuid),
    backchannel_logout_uri: backchannelLogoutUriOf(tesseraIssuer, row.uuid),
    trust_amr: row.trustAmr,
  };
}

/** The audited and evented shape: never the secret, never the request's host. */
const auditView = (row: ProviderRow) => {
  const {
    redirect_uri: _,
    post_logout_redirect_uri: _post,
    backchannel_logout_uri: _back,
    ...rest
  } = providerJson(row, "");
  return rest;
};
const target = (row: ProviderRow) => ({ kind: "backend_oidc", uuid: row.uuid, tenantUuid: row.tenantUuid });

async function providerEvent(app: AppContext, tx: DbOrTx, action: "created" | "updated" | "deleted", row: ProviderRow) {
  // Every change may change where the login page sends a domain's users (home-realm.ts).
  await realmsChanged(app, tx);
  return publishEvent(app, tx, {
    name: `auth_backend_oidc_${action}`,
    routingKey: routingKey(`auth.backends.oidc.{uuid}.${action}`, { uuid: row.uuid }),
    // Never the client secret: events go to every daemon on the bus.
    data: {
      uuid: row.uuid,
      tenant_uuid: row.tenantUuid,
      name: row.name,
      display_name: row.displayName,
      issuer: row.issuer,
      provisioning: row.provisioning,
    },
    tenantUuid: row.tenantUuid,
    userUuid: "*",
    aggregate: `backend_oidc:${row.uuid}`,
  });
}

const invalid = (field: string, constraintId: string, message: string, constraint: unknown = true) =>
  new InvalidData(RESOURCE, { [field]: { constraint_id: constraintId, constraint, message } } as Details);

function checkedLocally(app: AppContext, issuer: string): string {
  const refusal = urlRefusal(issuer, policyOf(app));
  if (refusal) throw invalid("issuer", "outbound_url", `The issuer ${refusal}.`, { outbound_http: "policy" });
  return issuer;
}

/**
 * The issuer of an input (a preset's own when the input names none), checked against the outbound policy,
 * then its discovery fetched: every problem is a 400 naming `issuer`.
 */
async function checkedIssuer(app: AppContext, input: ProviderInput): Promise<string> {
  const preset = input.preset ?? "oidc";
  const issuer = (input.issuer ?? PRESET_ISSUERS[preset] ?? "").replace(/\/+$/, "");
  if (!issuer) throw invalid("issuer", "required", "The issuer is required (or a preset that names it).");
  checkedLocally(app, issuer);
  if (preset === "github") return checkedGithub(app, input, issuer);
  const policy = policyOf(app);
  try {
    const metadata = await upstreamMetadata(app, issuer, { fresh: true, templateIssuer: preset === "entra" });
    for (const [name, url] of Object.entries({
      token_endpoint: metadata.token_endpoint,
      jwks_uri: metadata.jwks_uri,
      ...(metadata.userinfo_endpoint ? { userinfo_endpoint: metadata.userinfo_endpoint } : {}),
    })) {
      const bad = urlRefusal(url, policy);
      if (bad) throw new UpstreamUnavailable(`its ${name} ${bad}`);
    }
  } catch (e) {
    if (!(e instanceof UpstreamUnavailable)) throw e;
    throw invalid("issuer", "discovery", `The provider's discovery failed: ${e.message}.`, {
      discovery: "OpenID Connect Discovery 1.0",
    });
  }
  return issuer;
}

/**
 * GitHub: plain OAuth 2.0, nothing to discover; its endpoints are checked against the outbound policy as
 * a discovered provider's are. It issues no ID token, so no native application can log in with one.
 */
function checkedGithub(app: AppContext, input: ProviderInput, base: string): string {
  if (input.native_client_ids?.length)
    throw invalid(
      "native_client_ids",
      "not_applicable",
      "GitHub issues no ID token: POST /0.1/token with idp_token cannot use this provider.",
    );
  for (const [name, url] of Object.entries(githubEndpoints(base))) {
    const bad = urlRefusal(url, policyOf(app));
    if (bad) throw invalid("issuer", "outbound_url", `GitHub's ${name} endpoint ${bad}.`, { outbound_http: "policy" });
  }
  return base;
}

/** GitHub signs no ID token, so it has no `amr` that could be trusted (amr.ts). */
function checkedTrust(input: ProviderInput): void {
  if (input.trust_amr && input.preset === "github")
    throw invalid(
      "trust_amr",
      "not_applicable",
      "GitHub issues no ID token: it has no amr claim to trust, so the tenant's second factor always applies.",
    );
}

function rowValues(input: ProviderInput, issuer: string) {
  const github = input.preset === "github";
  const scopes = [...new Set(input.scopes ?? (github ? GITHUB_SCOPES : DEFAULT_SCOPES))];
  // An OpenID provider needs `openid`; GitHub does not know it.
  if (!github && !scopes.includes("openid")) scopes.unshift("openid");
  return {
    name: input.name,
    displayName: input.display_name,
    preset: input.preset ?? "oidc",
    issuer,
    clientId: input.client_id,
    scopes,
    nativeClientIds: [...new Set(input.native_client_ids ?? [])],
    provisioning: input.provisioning ?? "link",
    claimMapping: { ...DEFAULT_CLAIM_MAPPING, ...(input.claim_mapping ?? {}) },
    upstreamLogout: input.upstream_logout ?? false,
    trustAmr: input.trust_amr ?? false,
  };
}

async function nameFree(tx: DbOrTx, tenantUuid: string, name: string, except?: string): Promise<void> {
  const [other] = await tx
    .select({ uuid: upstreamOidcProviders.uuid })
    .from(upstreamOidcProviders)
    .where(and(eq(upstreamOidcProviders.tenantUuid, tenantUuid), eq(upstreamOidcProviders.name, name)));
  if (other && other.uuid !== except)
    throw new Conflict(RESOURCE, {
      name: {
        constraint_id: "unique",
        constraint: "name",
        message: `The tenant already has a provider named "${name}"`,
      },
    });
}

export async function createProvider(
  app: AppContext,
  caller: Caller,
  input: ProviderInput,
  tesseraIssuer: string,
): Promise<ProviderJson> {
  const tenantUuid = caller.tenantUuid;
  if (!tenantUuid) throw new NotFound("tenants");
  if (!input.client_secret) throw invalid("client_secret", "required", "The client secret is required.");
  checkedTrust(input);
  const issuer = await checkedIssuer(app, input);
  return inTransaction(app, async (tx) => {
    await nameFree(tx, tenantUuid, input.name);
    // The uuid chosen here: the sealed secret is bound to its row (services/secrets/sealing.ts).
    const uuid = randomUUID();
    const [row] = await tx
      .insert(upstreamOidcProviders)
      .values({ ...rowValues(input, issuer), uuid, tenantUuid, clientSecret: seal(app, input.client_secret!, uuid) })
      .returning();
    await providerEvent(app, tx, "created", row!);
    const entry = resourceAudit("backend_oidc.create", target(row!), null, auditView(row!));
    entry.changes!.push(secretChange("client_secret"));
    await recordAudit(app, tx, caller, entry);
    return providerJson(row!, tesseraIssuer);
  });
}

/** The provider when it belongs to the caller's scoping tenant or below; else 404. */
export async function requireVisibleProvider(
  app: AppContext,
  caller: Caller,
  uuid: string,
  db: DbOrTx = app.db,
): Promise<ProviderRow> {
  const [row] = await db.select().from(upstreamOidcProviders).where(eq(upstreamOidcProviders.uuid, uuid));
  if (!row || !(await tenantVisible(app, caller, row.tenantUuid, db))) throw new NotFound(RESOURCE, uuid);
  return row;
}

export async function updateProvider(
  app: AppContext,
  caller: Caller,
  uuid: string,
  input: ProviderInput,
): Promise<void> {
  const current = await requireVisibleProvider(app, caller, uuid);
  checkedTrust(input);
  // The same issuer (and preset) was checked when it was set: only the local checks again, no request.
  const same =
    (input.issuer ?? current.issuer).replace(/\/+$/, "") === current.issuer &&
    (input.preset ?? "oidc") === current.preset;
  const issuer = same ? checkedLocally(app, current.issuer) : await checkedIssuer(app, input);
  await inTransaction(app, async (tx) => {
    const before = await requireVisibleProvider(app, caller, uuid, tx);
    await nameFree(tx, before.tenantUuid, input.name, uuid);
    const [row] = await tx
      .update(upstreamOidcProviders)
      .set({
        ...rowValues(input, issuer),
        clientSecret: input.client_secret === undefined ? before.clientSecret : seal(app, input.client_secret, uuid),
      })
      .where(eq(upstreamOidcProviders.uuid, uuid))
      .returning();
    await providerEvent(app, tx, "updated", row!);
    const entry = resourceAudit("backend_oidc.update", target(row!), auditView(before), auditView(row!));
    if (input.client_secret !== undefined && secretChanged(app, before.clientSecret, input.client_secret, uuid))
      entry.changes!.push(secretChange("client_secret"));
    await recordAudit(app, tx, caller, entry);
  });
  if (current.issuer !== issuer) forgetUpstream(app, current.issuer);
}

/** Whether a new secret differs from the stored one; one that no longer opens (its key is gone) is replaced. */
function secretChanged(app: AppContext, stored: string, given: string, uuid: string): boolean {
  try {
    return unseal(app, stored, uuid) !== given;
  } catch (e) {
    if (e instanceof ServiceUnavailable) return true;
    throw e;
  }
}

/** Absent or invisible: nothing to delete (D4 of docs/wazo-auth-differences.md). Its links and sign-ins under way go with it. */
export async function deleteProvider(app: AppContext, caller: Caller, uuid: string): Promise<void> {
  const gone = await inTransaction(app, async (tx) => {
    const row = await orAbsent(requireVisibleProvider(app, caller, uuid, tx));
    if (!row) return null;
    await tx.delete(upstreamOidcProviders).where(eq(upstreamOidcProviders.uuid, uuid));
    await providerEvent(app, tx, "deleted", row);
    await recordAudit(app, tx, caller, resourceAudit("backend_oidc.delete", target(row), auditView(row), null));
    return row;
  });
  if (gone) forgetUpstream(app, gone.issuer);
}

export type ProviderFilter = "name" | "issuer" | "provisioning";
const SORT = {
  name: upstreamOidcProviders.name,
  display_name: upstreamOidcProviders.displayName,
  created_at: upstreamOidcProviders.createdAt,
} as const;

export async function listProviders(
  app: AppContext,
  caller: Caller,
  params: ListParams<ProviderFilter>,
  tesseraIssuer: string,
): Promise<Collection<ProviderJson>> {
  const base = inCallerScope(app, caller, params.recurse, upstreamOidcProviders.tenantUuid);
  const conditions: SQL[] = [];
  const pattern = searchPattern(params.search);
  if (pattern) conditions.push(ilike(upstreamOidcProviders.name, pattern));
  const f = params.filters;
  if (f.name !== undefined) conditions.push(eq(upstreamOidcProviders.name, f.name));
  if (f.issuer !== undefined) conditions.push(eq(upstreamOidcProviders.issuer, f.issuer));
  if (f.provisioning !== undefined) conditions.push(eq(upstreamOidcProviders.provisioning, f.provisioning));
  const where = conditions.length ? and(base, ...conditions) : base;
  const column = SORT[(params.order ?? "name") as keyof typeof SORT] ?? upstreamOidcProviders.name;
  const page = await listPage(
    app.db,
    upstreamOidcProviders,
    base,
    where,
    [params.direction === "desc" ? desc(column) : asc(column), asc(upstreamOidcProviders.uuid)],
    params,
  );
  return collection(
    page.rows.map((r) => providerJson(r, tesseraIssuer)),
    page.filtered,
    page.total,
  );
}

/** The providers whose buttons the login page of a client of `tenantUuid` shows (sign-in not turned off). */
export async function providersForSignIn(app: AppContext, tenantUuid: string): Promise<ProviderRow[]> {
  return app.db
    .select()
    .from(upstreamOidcProviders)
    .where(eq(upstreamOidcProviders.tenantUuid, tenantUuid))
    .orderBy(asc(upstreamOidcProviders.displayName), asc(upstreamOidcProviders.uuid));
}

export async function findProvider(app: AppContext, uuid: string): Promise<ProviderRow | null> {
  const [row] = await app.db.select().from(upstreamOidcProviders).where(eq(upstreamOidcProviders.uuid, uuid));
  return row ?? null;
}
