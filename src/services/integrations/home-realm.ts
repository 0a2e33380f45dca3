// Home-realm discovery for the hosted login page (docs/federation.md "Home-realm discovery"): which
// identity provider a login name's email domain belongs to. Decided by the DOMAIN only — never by
// whether a user exists — so the answer says nothing of accounts. A domain belongs to the tenant
// whose `domain_names` hold it (unique across tenants, stored lower-case), matched whole and
// case-insensitively: `evil-example.com` is not `example.com`, and a sub-domain
// (`eu.example.com`) is not `example.com` either (as Entra ID's home-realm discovery).
//
// Per request nothing is read: every tenant domain and every sign-in provider (upstream OpenID
// providers not `off`, SAML configurations) is copied in memory on first use. Each writer of these
// (tenant domains, providers, SAML configurations) announces its change on commit
// (`realmsChanged`: NOTIFY tessera_realms_changed) and every instance drops its copy, reloaded on
// next use. While notifications may be missed (LISTEN connection lost), the copy is not used: the
// lookup reads the database for the one domain asked, and the copy is dropped once hearing resumes.
// A copy is also never kept longer than MAX_AGE_MS, for changes made by hand in SQL.
import { eq, ne, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { samlConfigs, tenantDomains, upstreamOidcProviders } from "../../db/schema.ts";
import { afterCommit } from "../../db/tx.ts";

export const REALMS_CHANNEL = "tessera_realms_changed";
const MAX_AGE_MS = 10 * 60_000;

/** A provider the page can send a user to: an upstream OpenID provider, or the tenant's SAML IdP. */
export type RealmProvider = { kind: "oidc"; uuid: string } | { kind: "saml" };

export interface HomeRealm {
  tenantUuid: string;
  /** Every sign-in provider of the tenant; exactly one means the user goes straight to it. */
  providers: RealmProvider[];
}

interface Copy {
  domains: Map<string, string>;
  providers: Map<string, RealmProvider[]>;
  /** Tenants holding at least one domain. */
  claiming: Set<string>;
  loadedAt: number;
}

interface State {
  copy: Copy | null;
  loading: Promise<Copy> | null;
  version: number;
  trusted: boolean;
  subscribed: Promise<void> | null;
  /** Whole reads so far (tests check that requests do not read). */
  loads: number;
}

const states = new WeakMap<AppContext, State>();

function stateOf(app: AppContext): State {
  let s = states.get(app);
  if (!s) {
    s = { copy: null, loading: null, version: 0, trusted: true, subscribed: null, loads: 0 };
    states.set(app, s);
  }
  return s;
}

function drop(s: State): void {
  s.version++;
  s.copy = null;
  s.loading = null;
}

/** The domain of a login name (`user@Example.COM.` → `example.com`), or null when it has none. */
export function domainOf(login: string): string | null {
  const at = login.lastIndexOf("@");
  if (at <= 0) return null;
  const domain = login
    .slice(at + 1)
    .trim()
    .toLowerCase()
    .replace(/\.$/, "");
  return /^[a-z0-9.-]+$/.test(domain) && domain.includes(".") ? domain : null;
}

/**
 * Called in the transaction of every change to tenant domains, upstream providers or SAML
 * configurations: the NOTIFY reaches every instance at commit; this one drops its copy then too.
 */
export async function realmsChanged(app: AppContext, tx: DbOrTx): Promise<void> {
  await tx.execute(sql`select pg_notify(${REALMS_CHANNEL}, '')`);
  afterCommit(tx, () => drop(stateOf(app)));
}

function subscribe(app: AppContext, s: State): Promise<void> {
  s.subscribed ??= (async () => {
    app.onClose.push(await app.database.listen(REALMS_CHANNEL, () => drop(s)));
    app.database.onListenChange((listening) => {
      s.trusted = listening;
      drop(s); // a change may have been missed meanwhile
    });
  })().catch((e) => {
    s.subscribed = null; // the database is away: the next lookup tries again
    throw e;
  });
  return s.subscribed;
}

function group(rows: Array<{ tenantUuid: string; provider: RealmProvider }>): Map<string, RealmProvider[]> {
  const out = new Map<string, RealmProvider[]>();
  for (const r of rows) {
    const list = out.get(r.tenantUuid);
    if (list) list.push(r.provider);
    else out.set(r.tenantUuid, [r.provider]);
  }
  return out;
}

async function providerRows(app: AppContext, tenantUuid?: string) {
  const oidc = await app.db
    .select({ uuid: upstreamOidcProviders.uuid, tenantUuid: upstreamOidcProviders.tenantUuid })
    .from(upstreamOidcProviders)
    .where(
      tenantUuid
        ? sql`${upstreamOidcProviders.tenantUuid} = ${tenantUuid} and ${upstreamOidcProviders.provisioning} <> 'off'`
        : ne(upstreamOidcProviders.provisioning, "off"),
    );
  const saml = await app.db
    .select({ tenantUuid: samlConfigs.tenantUuid })
    .from(samlConfigs)
    .where(tenantUuid ? eq(samlConfigs.tenantUuid, tenantUuid) : sql`true`);
  return [
    ...oidc.map((p) => ({ tenantUuid: p.tenantUuid, provider: { kind: "oidc", uuid: p.uuid } as RealmProvider })),
    ...saml.map((p) => ({ tenantUuid: p.tenantUuid, provider: { kind: "saml" } as RealmProvider })),
  ];
}

async function load(app: AppContext, s: State): Promise<Copy> {
  if (s.copy && Date.now() - s.copy.loadedAt < MAX_AGE_MS) return s.copy;
  if (!s.loading) {
    const version = s.version;
    s.loads++;
    s.loading = (async () => {
      const loadedAt = Date.now();
      const domains = await app.db
        .select({ name: tenantDomains.name, tenantUuid: tenantDomains.tenantUuid })
        .from(tenantDomains);
      const copy: Copy = {
        domains: new Map(domains.map((d) => [d.name.toLowerCase(), d.tenantUuid])),
        providers: group(await providerRows(app)),
        claiming: new Set(domains.map((d) => d.tenantUuid)),
        loadedAt,
      };
      // A change heard while reading may be missing from what was read: not kept.
      if (version === s.version && s.trusted) s.copy = copy;
      return copy;
    })().finally(() => {
      if (version === s.version) s.loading = null;
    });
  }
  return s.loading;
}

/** The tenant claiming `domain` and its providers, read from the database (the copy is not trusted). */
async function lookUpDirect(app: AppContext, domain: string): Promise<HomeRealm | null> {
  const [row] = await app.db
    .select({ tenantUuid: tenantDomains.tenantUuid })
    .from(tenantDomains)
    .where(sql`lower(${tenantDomains.name}) = ${domain}`)
    .limit(1);
  if (!row) return null;
  return { tenantUuid: row.tenantUuid, providers: (await providerRows(app, row.tenantUuid)).map((r) => r.provider) };
}

/** The tenant whose `domain_names` claim the login name's domain, with its providers; null when none does. */
export async function homeRealmOf(app: AppContext, login: string): Promise<HomeRealm | null> {
  const domain = domainOf(login);
  if (!domain) return null;
  const s = stateOf(app);
  await subscribe(app, s);
  if (!s.trusted) return lookUpDirect(app, domain);
  const copy = await load(app, s);
  const tenantUuid = copy.domains.get(domain);
  if (!tenantUuid) return null;
  return { tenantUuid, providers: copy.providers.get(tenantUuid) ?? [] };
}

/**
 * The one provider a domain of `tenantUuid` leads to, or null (no domain, no provider, or several):
 * with one, its login page asks the identifier first.
 */
export async function tenantHomeProvider(app: AppContext, tenantUuid: string): Promise<RealmProvider | null> {
  const s = stateOf(app);
  await subscribe(app, s);
  if (!s.trusted) {
    const [domain] = await app.db
      .select({ name: tenantDomains.name })
      .from(tenantDomains)
      .where(eq(tenantDomains.tenantUuid, tenantUuid))
      .limit(1);
    const providers = domain ? await providerRows(app, tenantUuid) : [];
    return providers.length === 1 ? providers[0]!.provider : null;
  }
  const copy = await load(app, s);
  const providers = copy.providers.get(tenantUuid) ?? [];
  return copy.claiming.has(tenantUuid) && providers.length === 1 ? providers[0]! : null;
}

/** Whole reads of the copy so far (tests: a request does not read). */
export const realmLoads = (app: AppContext) => stateOf(app).loads;
