// How a webhook delivery is made (the `webhook` kind of the outbound queue): at every attempt the webhook is
// read again (deleted or disabled since: the delivery is dropped), the body is the event as Standard Webhooks
// recommends (`{type, timestamp, data}`, plus `tenant_uuid`), signed with the current secret and, during a
// rotation's grace, the previous one; `webhook-id` is the message's id, the same at every retry. A webhook whose
// attempts keep failing (`webhooks.disable_after_failures` in a row, for `webhooks.disable_after_seconds`) is
// disabled, with a bus event, an audit entry and an email to its tenant's administrators.
import { and, eq, inArray, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { execRows } from "../../db/index.ts";
import { webhooks } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { errorFields } from "../../observe/log.ts";
import { recordAudit, SYSTEM_ACTOR } from "../audit/record.ts";
import { STOCK_TENANT_ADMIN_POLICY } from "../identity/stock-policies.ts";
import { sendNotice } from "../integrations/notifications.ts";
import {
  type Delivery,
  type DeliveryRequest,
  type OwnerStreak,
  registerDeliveryKind,
} from "../outbound/delivery-queue.ts";
import { webhookHeaders } from "./signature.ts";
import { WEBHOOK_KIND, webhookEvent, type WebhookPayload } from "./subscriptions.ts";

/** The policies whose holders are told when a webhook of their tenant is disabled. */
const ADMIN_POLICIES = [STOCK_TENANT_ADMIN_POLICY, "wazo_default_admin_policy"];

/** Declares the `webhook` delivery kind (at start-up; idempotent). */
export function registerWebhookDelivery(): void {
  registerDeliveryKind(WEBHOOK_KIND, {
    async prepare(payload, ctx) {
      const [request] = await prepareWebhooks(ctx.app, [payload as WebhookPayload]);
      return request ?? null;
    },
    async prepareMany(items) {
      return items.length === 0
        ? []
        : prepareWebhooks(
            items[0]!.ctx.app,
            items.map((i) => i.payload as WebhookPayload),
          );
    },
    async onAttemptFailed(delivery, streak, { app }) {
      await disableIfFailing(app, delivery, streak);
    },
  });
}

/**
 * The requests of a claimed batch, its webhooks read once (again at every attempt: one deleted or disabled
 * since is dropped). Signed now, so that the timestamp is fresh at every attempt (receivers refuse old ones).
 */
async function prepareWebhooks(
  app: AppContext,
  payloads: (WebhookPayload & { ping?: boolean })[],
): Promise<(DeliveryRequest | null)[]> {
  const uuids = [...new Set(payloads.map((p) => p.webhook_uuid))];
  const rows = await app.db.select().from(webhooks).where(inArray(webhooks.uuid, uuids));
  const byUuid = new Map(rows.map((w) => [w.uuid, w]));
  return payloads.map((p) => {
    const w = byUuid.get(p.webhook_uuid);
    if (!w || (!w.enabled && !p.ping)) return null;
    const body = JSON.stringify({
      type: p.event.type,
      timestamp: p.event.timestamp,
      tenant_uuid: p.event.tenant_uuid,
      data: p.event.data,
    });
    const secrets = [w.secret];
    if (w.previousSecret && w.previousSecretExpiresAt && w.previousSecretExpiresAt.getTime() > Date.now())
      secrets.push(w.previousSecret);
    return {
      url: w.url,
      headers: { ...webhookHeaders(secrets, p.message_id, body), "user-agent": "Tessera-Webhooks/1" },
      body,
    };
  });
}

async function disableIfFailing(app: AppContext, delivery: Delivery, streak: OwnerStreak): Promise<void> {
  const { disable_after_failures, disable_after_seconds } = app.config.webhooks;
  if (streak.failures < disable_after_failures) return;
  if (Date.now() - streak.failingSince.getTime() < disable_after_seconds * 1000) return;
  const reason = `${streak.failures} failed attempts in a row since ${streak.failingSince.toISOString()} (last: ${
    delivery.lastError ?? "unknown"
  })`;
  const disabled = await inTransaction(app, async (tx) => {
    const [row] = await tx
      .update(webhooks)
      .set({ enabled: false, disabledReason: reason, updatedAt: new Date() })
      .where(and(eq(webhooks.uuid, delivery.ownerKey), eq(webhooks.enabled, true)))
      .returning();
    if (!row) return null; // disabled or deleted meanwhile (another instance, an administrator)
    await webhookEvent(app, tx, "disabled", row);
    await recordAudit(app, tx, SYSTEM_ACTOR, {
      action: "webhook.disable",
      target: { kind: "webhook", uuid: row.uuid, tenantUuid: row.tenantUuid },
      outcome: "failure_streak",
      changes: [{ field: "enabled", old: true, new: false }],
    });
    return row;
  });
  if (!disabled) return;
  app.log.warn("webhook disabled after a failure streak", { webhook_uuid: disabled.uuid, failures: streak.failures });
  await tellAdministrators(app, disabled).catch((e) =>
    app.log.warn("could not email the administrators of a disabled webhook", {
      webhook_uuid: disabled.uuid,
      ...errorFields(e),
    }),
  );
}

/** The main addresses of the tenant's users holding an administrator policy (directly or through a group). */
export async function tenantAdministratorAddresses(app: AppContext, tenantUuid: string): Promise<string[]> {
  const slugs = sql.join(
    ADMIN_POLICIES.map((slug) => sql`${slug}`),
    sql`, `,
  );
  const rows = await execRows<{ address: string }>(
    app.db,
    sql`select distinct e.address from auth_user u
        join auth_email e on e.user_uuid = u.uuid and e.main
        where u.tenant_uuid = ${tenantUuid} and (
          exists (select 1 from auth_user_policy up join auth_policy p on p.uuid = up.policy_uuid
                  where up.user_uuid = u.uuid and p.slug in (${slugs}))
          or exists (select 1 from auth_user_group ug join auth_group_policy gp on gp.group_uuid = ug.group_uuid
                  join auth_policy p on p.uuid = gp.policy_uuid
                  where ug.user_uuid = u.uuid and p.slug in (${slugs})))
        order by e.address`,
  );
  return rows.map((r) => r.address);
}

async function tellAdministrators(app: AppContext, w: typeof webhooks.$inferSelect): Promise<void> {
  const addresses = await tenantAdministratorAddresses(app, w.tenantUuid);
  for (const address of addresses) {
    await sendNotice(app, {
      email_address: address,
      subject: "A webhook was disabled",
      text: [
        `The webhook ${w.uuid}${w.description ? ` (${w.description})` : ""} of tenant ${w.tenantUuid} was disabled:`,
        `its endpoint ${new URL(w.url).host} kept failing.`,
        "",
        w.disabledReason ?? "",
        "",
        "Fix the endpoint, then enable the webhook again (PUT /0.1/webhooks/{uuid} with enabled: true).",
        "Deliveries recorded while it was disabled are not sent; the delivery log lists them.",
      ].join("\n"),
    });
  }
}
