// The one internal event interface: `publishEvent(app, tx, event)` records a bus event
// (wazo-auth's bus events) in the transactional outbox, in the transaction of the change that causes
// it. The bus publisher (when AMQP is configured) delivers the outbox rows; without a bus they stay
// recorded and observable.
import { asc, sql } from "drizzle-orm";
import type { AppContext } from "../boot/context.ts";
import { execRows, type DbOrTx } from "../db/index.ts";
import { eventOutbox } from "../db/schema.ts";
import type { RowInsert } from "../db/bound-inserts.ts";
import { isoTime } from "../domain/time.ts";

export interface BusEvent {
  name: string;
  /** Routing key with placeholders already escaped (see `routingKey`). */
  routingKey: string;
  data: Record<string, unknown>;
  tenantUuid?: string | null;
  /** `"*"` for tenant-wide events; a user uuid for user events; null/absent for none. */
  userUuid?: string | "*" | null;
  sessionUuid?: string;
  /** Orders delivery: events of one aggregate go out in the order they were recorded. */
  aggregate: string;
}

const ESCAPES: Array<[string, string]> = [
  [".", "__DOT__"],
  ["#", "__HASH__"],
  ["*", "__STAR__"],
];

/** Fills `{name}` placeholders with escaped values: `.`→`__DOT__`, `#`→`__HASH__`, `*`→`__STAR__`. */
export function routingKey(template: string, params: Record<string, string | null | undefined>): string {
  return template.replace(/\{(\w+)\}/g, (_m, key: string) => {
    let value = String(params[key] ?? "");
    for (const [from, to] of ESCAPES) value = value.replaceAll(from, to);
    return value;
  });
}

export function eventHeaders(app: AppContext, event: BusEvent): Record<string, unknown> {
  const headers: Record<string, unknown> = {
    name: event.name,
    origin_uuid: app.xivoUuid,
    timestamp: isoTime(Date.now() / 1000, false, true),
    tenant_uuid: event.tenantUuid ?? null,
    required_access: `event.${event.name}`,
    required_acl: `events.${event.routingKey}`,
  };
  if (event.userUuid) headers[`user_uuid:${event.userUuid}`] = true;
  if (event.sessionUuid) headers.session_uuid = event.sessionUuid;
  return headers;
}

export async function publishEvent(app: AppContext, tx: DbOrTx, event: BusEvent): Promise<void> {
  await outboxInsert(app, tx, event);
}

/** Rows of one multi-row outbox insert: 5 parameters each, well under PostgreSQL's 65,535. */
const EVENTS_PER_INSERT = 5000;

/**
 * Records many events (in order) with one insert per few thousand, not one per event (a purge's
 * sessions). The rows travel as one JSON parameter: building a 5,000-row VALUES list with its
 * 25,000 parameters took the query builder 0.2–0.7 s of the event loop per purge batch (issue 29).
 */
export async function publishEvents(app: AppContext, tx: DbOrTx, events: BusEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += EVENTS_PER_INSERT) {
    const rows = events.slice(i, i + EVENTS_PER_INSERT).map((event) => outboxRow(app, event));
    await execRows(
      tx,
      sql`insert into ${eventOutbox} (name, routing_key, headers, payload, aggregate)
        select e.row->>'name', e.row->>'routingKey', e.row->'headers', e.row->'payload', e.row->>'aggregate'
        from jsonb_array_elements(${JSON.stringify(rows)}::jsonb) with ordinality as e(row, position)
        order by e.position`,
    );
  }
}

function outboxRow(app: AppContext, event: BusEvent) {
  const headers = eventHeaders(app, event);
  return {
    name: event.name,
    routingKey: event.routingKey,
    headers,
    payload: { ...headers, data: event.data },
    aggregate: event.aggregate,
  };
}

/** The outbox insert of `event`, to run or to embed in a larger statement. */
export function outboxInsert(app: AppContext, tx: DbOrTx, event: BusEvent) {
  return tx.insert(eventOutbox).values(outboxRow(app, event));
}

/** The outbox row of `event`, for a statement of several inserts (a login's one write: db/bound-inserts.ts). */
export function outboxRowInsert(app: AppContext, event: BusEvent): RowInsert {
  return { table: eventOutbox, row: outboxRow(app, event) };
}

export interface RecordedEvent {
  id: number;
  name: string;
  routingKey: string;
  headers: Record<string, unknown>;
  payload: Record<string, unknown> & { data: Record<string, unknown> };
  publishedAt: Date | null;
}

/** Every recorded event, oldest first (tests and diagnostics). */
export async function listRecordedEvents(db: DbOrTx): Promise<RecordedEvent[]> {
  const rows = await db.select().from(eventOutbox).orderBy(asc(eventOutbox.id));
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    routingKey: r.routingKey,
    headers: r.headers as Record<string, unknown>,
    payload: r.payload as RecordedEvent["payload"],
    publishedAt: r.publishedAt,
  }));
}

// ---- the events of §13 that more than one service emits ----

export function sessionCreatedEvent(s: {
  uuid: string;
  tenantUuid: string;
  userUuid: string | null;
  mobile: boolean;
}): BusEvent {
  return {
    name: "auth_session_created",
    routingKey: routingKey("auth.sessions.{session_uuid}.created", { session_uuid: s.uuid }),
    data: { uuid: s.uuid, tenant_uuid: s.tenantUuid, user_uuid: s.userUuid, mobile: s.mobile },
    tenantUuid: s.tenantUuid,
    userUuid: s.userUuid,
    sessionUuid: s.uuid,
    aggregate: `session:${s.uuid}`,
  };
}

export function sessionDeletedEvent(s: { uuid: string; tenantUuid: string; userUuid: string | null }): BusEvent {
  return {
    name: "auth_session_deleted",
    routingKey: routingKey("auth.sessions.{session_uuid}.deleted", { session_uuid: s.uuid }),
    data: { uuid: s.uuid, user_uuid: s.userUuid, tenant_uuid: s.tenantUuid },
    tenantUuid: s.tenantUuid,
    userUuid: s.userUuid,
    sessionUuid: s.uuid,
    aggregate: `session:${s.uuid}`,
  };
}
