// The audit trail's one way in (issue 26; OWASP ASVS V16): `recordAudit(app, tx, actor, entry)`
// writes one entry in the transaction of the change it describes, so a change that rolls back
// leaves no entry and one that commits never loses it. The chain (each entry's hash covers the
// previous one of its tenant) is computed by the database's trigger (migration audit), whoever
// inserts. When a broker is configured, the entry is also put in the event outbox (same
// transaction), so the bus carries a copy outside the database.
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { describeCause } from "../../db/failures.ts";
import { auditEntries } from "../../db/schema.ts";
import type { Caller } from "../../domain/caller.ts";
import { isSecretKey } from "../../config/secrets.ts";
import { outboxInsert, outboxRowInsert, routingKey, type BusEvent } from "../events.ts";
import type { RowInsert } from "../../db/bound-inserts.ts";

/** Who acted, and from where. */
export interface AuditActor {
  userUuid: string | null;
  sessionUuid: string | null;
  tenantUuid: string | null;
  address: string | null;
  userAgent: string | null;
}

export interface AuditTarget {
  kind: string;
  uuid?: string | null;
  tenantUuid?: string | null;
}

export interface AuditChange {
  field: string;
  old: unknown;
  new: unknown;
}

export interface AuditEntry {
  /** Stable dotted name: `user.create`, `login.failure`, `session.delete`… (docs/audit.md lists them). */
  action: string;
  target?: AuditTarget;
  /** `success`, or the class of a refusal (`invalid_credentials`, `throttled`, `mfa_required`…). */
  outcome?: string;
  changes?: AuditChange[];
}

/** No actor (the scheduler, a CLI command on the database). */
export const SYSTEM_ACTOR: AuditActor = {
  userUuid: null,
  sessionUuid: null,
  tenantUuid: null,
  address: null,
  userAgent: null,
};

/** The actor of an authenticated request: its token's user and session, its own tenant, its origin. */
export function actorOf(caller: Caller | null | undefined): AuditActor {
  if (!caller) return SYSTEM_ACTOR;
  return {
    userUuid: caller.userUuid,
    sessionUuid: caller.token.sessionUuid ?? null,
    tenantUuid: caller.ownTenantUuid,
    address: caller.origin?.address ?? null,
    userAgent: caller.origin?.userAgent ?? null,
  };
}

/**
 * A user acting on their own account from a hosted page (the login page's second step, the account
 * page): no token of theirs authenticates the request, so the user, their tenant and the browser's origin.
 */
export function selfActor(
  user: { uuid: string; tenantUuid: string },
  origin: { remoteAddr: string; userAgent: string },
): AuditActor {
  return {
    userUuid: user.uuid,
    sessionUuid: null,
    tenantUuid: user.tenantUuid,
    address: origin.remoteAddr,
    userAgent: origin.userAgent || null,
  };
}

/**
 * Fields whose values never enter the trail (their names do, with null old/new values): the
 * configuration's secret names (secrets.ts) and what the audit adds — hashes, codes, salts,
 * encrypted secrets, anything named like a password, token, secret or code.
 */
// `passwordless` (a tenant's MFA policy setting, a boolean) is no secret.
const DENIED = /(password(?!less)|passwd|hash|token|secret|code|salt|private|key|credential|cookie|pin$)/i;

export function isDeniedField(field: string): boolean {
  return isSecretKey(field) || DENIED.test(field);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * The fields of `fields` (API names) whose value differs between `before` and `after`; a denied
 * field appears by name only. `before` absent = a creation (old values null); `after` absent = a deletion.
 */
export function changesOf(
  before: Record<string, unknown> | null | undefined,
  after: Record<string, unknown> | null | undefined,
  fields: readonly string[] = Object.keys({ ...before, ...after }),
): AuditChange[] {
  const out: AuditChange[] = [];
  for (const field of fields) {
    const old = before?.[field];
    const next = after?.[field];
    if (before && after && !(field in after)) continue; // not part of the update
    if (same(old, next)) continue;
    out.push(isDeniedField(field) ? { field, old: null, new: null } : { field, old: old ?? null, new: next ?? null });
  }
  return out;
}

/** A field set (a password, a code…) whose value is never recorded. */
export const secretChange = (field: string): AuditChange => ({ field, old: null, new: null });

/** The row of an entry: scoped (and chained) in the target's tenant, else the actor's, else the master's. */
function auditRow(app: AppContext, actor: AuditActor, entry: AuditEntry) {
  const changes = (entry.changes ?? []).map((c) => (isDeniedField(c.field) ? secretChange(c.field) : c));
  return {
    tenantUuid: entry.target?.tenantUuid ?? actor.tenantUuid ?? app.topTenantUuid,
    actorUserUuid: actor.userUuid,
    actorSessionUuid: actor.sessionUuid,
    actorTenantUuid: actor.tenantUuid,
    actorAddress: actor.address,
    // A User-Agent is client input: no NUL (jsonb and text refuse it), bounded.
    actorUserAgent: actor.userAgent === null ? null : actor.userAgent.replaceAll("\0", "\uFFFD").slice(0, 512),
    action: entry.action,
    targetKind: entry.target?.kind ?? null,
    targetUuid: entry.target?.uuid ?? null,
    targetTenantUuid: entry.target?.tenantUuid ?? null,
    outcome: entry.outcome ?? "success",
    changes,
  };
}

/** The bus copy of an entry (`auth_audit_entry_recorded`, routing key `auth.audit.{action}`). */
function auditEvent(row: ReturnType<typeof auditRow>): BusEvent {
  return {
    name: "auth_audit_entry_recorded",
    routingKey: routingKey("auth.audit.{action}", { action: row.action }),
    data: {
      actor: {
        user_uuid: row.actorUserUuid,
        session_uuid: row.actorSessionUuid,
        tenant_uuid: row.actorTenantUuid,
        address: row.actorAddress,
        user_agent: row.actorUserAgent,
      },
      action: row.action,
      target: { kind: row.targetKind, uuid: row.targetUuid, tenant_uuid: row.targetTenantUuid },
      outcome: row.outcome,
      changes: row.changes,
    },
    tenantUuid: row.tenantUuid,
    userUuid: null,
    aggregate: `audit:${row.tenantUuid}`,
  };
}

/** The row of an entry, for a statement of several inserts (a login's one write: db/bound-inserts.ts). */
export function auditInsert(
  app: AppContext,
  _tx: DbOrTx,
  actor: AuditActor | Caller | null,
  entry: AuditEntry,
): RowInsert {
  return { table: auditEntries, row: auditRow(app, toActor(actor), entry) };
}

/** The outbox copy of an entry, when a broker is configured (else null: nothing would ever read it). */
export function auditOutboxInsert(
  app: AppContext,
  _tx: DbOrTx,
  actor: AuditActor | Caller | null,
  entry: AuditEntry,
): RowInsert | null {
  return app.config.amqp ? outboxRowInsert(app, auditEvent(auditRow(app, toActor(actor), entry))) : null;
}

const toActor = (a: AuditActor | Caller | null): AuditActor =>
  a === null ? SYSTEM_ACTOR : "token" in a ? actorOf(a) : a;

/** Records `entries` in `tx` (one insert), and their bus copies when a broker is configured. */
export async function recordAudit(
  app: AppContext,
  tx: DbOrTx,
  actor: AuditActor | Caller | null,
  ...entries: AuditEntry[]
): Promise<void> {
  if (entries.length === 0) return;
  const who = toActor(actor);
  const rows = entries.map((e) => auditRow(app, who, e));
  await tx.insert(auditEntries).values(rows);
  if (app.config.amqp) for (const row of rows) await outboxInsert(app, tx, auditEvent(row));
}

/**
 * A refusal recorded outside any write (a throttled login, a client that failed to authenticate):
 * its own small insert. When even that fails (an outage) the refusal stands; the log line says what
 * was lost, never the query's parameters.
 */
export async function recordRefusalEntry(app: AppContext, actor: AuditActor, entry: AuditEntry): Promise<void> {
  try {
    await recordAudit(app, app.db, actor, entry);
  } catch (e) {
    app.log.warn("could not record a refusal in the audit trail", {
      action: entry.action,
      error: describeCause(e).message,
    });
  }
}

/** An entry about any resource, comparing its API shape before and after (either null). */
export function resourceAudit(
  action: string,
  target: { kind: string; uuid: string; tenantUuid: string },
  before: object | null,
  after: object | null,
): AuditEntry {
  const asRecord = (o: object | null) => o as Record<string, unknown> | null;
  return { action, target, changes: changesOf(asRecord(before), asRecord(after)) };
}
