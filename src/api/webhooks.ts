// Webhooks (docs/webhooks.md): subscriptions of the scoping tenant to the bus events, delivered by HTTP and
// signed per Standard Webhooks; their delivery log, redelivery and a test ping.
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import { RouteGroup } from "../http/route.ts";
import {
  createWebhook,
  type DeliveryFilter,
  deleteWebhook,
  listWebhookDeliveries,
  listWebhooks,
  pingWebhook,
  redeliver,
  requireVisibleWebhook,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookFilter,
  webhookJson,
} from "../services/webhooks/subscriptions.ts";

const webhookList = listQuery<WebhookFilter>({
  order: ["created_at", "url"],
  defaultOrder: "created_at",
  filters: ["url", "enabled"],
});
const deliveryList = listQuery<DeliveryFilter>({ order: [], defaultOrder: "", filters: ["status", "event_type"] });
const webhookParam = z.object({ webhook_uuid: uuidParam });
const deliveryParams = z.object({ webhook_uuid: uuidParam, delivery_uuid: uuidParam });

/** A bus event name (docs/events.md), a prefix of names ending in `*`, or `*` for every event. */
const eventFilter = z
  .string()
  .max(128)
  .regex(/^(\*|[a-z][a-z0-9_]*\*?)$/, "an event name (auth_user_created), a prefix ending in * (auth_user_*), or *");

const fields = {
  url: text(2_048, { min: 1 }).describe(
    "https URL the events are POSTed to (http and private addresses only as `outbound_http` allows)",
  ),
  events: z.array(eventFilter).min(1).max(100),
  description: text(1_024).optional(),
  enabled: z.boolean().optional(),
};
const body = z.object(fields);

const webhookSchema = z.object({
  uuid: z.string(),
  tenant_uuid: z.string(),
  url: z.string(),
  description: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable(),
  previous_secret_expires_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
const createdSchema = webhookSchema.extend({
  secret: z.string().describe("the signing secret (`whsec_…`), shown in this answer only"),
});
const listSchema = z.object({ items: z.array(webhookSchema), filtered: z.number(), total: z.number() });
const deliverySchema = z.object({
  uuid: z.string(),
  message_id: z.string().nullable(),
  event_type: z.string().nullable(),
  status: z.enum(["pending", "delivered", "failed", "dropped"]),
  attempts: z.number(),
  response_status_code: z.number().nullable(),
  error: z.string().nullable(),
  latency_ms: z.number().nullable(),
  created_at: z.string(),
  last_attempt_at: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
const deliveryListSchema = z.object({ items: z.array(deliverySchema), filtered: z.number(), total: z.number() });
const queuedSchema = z.object({ uuid: z.string().describe("the new delivery") });

export function webhookRoutes(): RouteGroup {
  return new RouteGroup("webhooks")
    .get(
      "/webhooks",
      {
        summary: "Webhooks of the scoping tenant (and below with `recurse`)",
        acl: "auth.webhooks.read",
        query: webhookList,
        responses: {
          200: { description: "`{items, filtered, total}`", schema: listSchema },
          400: "Invalid list parameter",
        },
      },
      async ({ c, app, caller, query }) => c.json(await listWebhooks(app, caller, query)),
    )
    .post(
      "/webhooks",
      {
        summary: "Subscribe an HTTP endpoint to the events of the scoping tenant and its sub-tenants",
        description:
          "`events`: bus event names (docs/events.md), prefixes ending in `*` (`auth_user_*`), or `*`. Each matching event is POSTed to `url`, signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with the `secret` of this answer, which is not shown again. A URL naming a loopback, private or link-local address, or plain http, is refused unless `outbound_http` admits it.",
        acl: "auth.webhooks.create",
        body,
        responses: {
          201: { description: "The webhook, with its signing secret", schema: createdSchema },
          400: "Invalid body, a refused URL, or the tenant's webhooks at their maximum",
        },
      },
      async ({ c, app, caller, body }) => c.json(await createWebhook(app, caller, body), 201),
    )
    .get(
      "/webhooks/{webhook_uuid}",
      {
        summary: "A webhook (never its secret)",
        acl: "auth.webhooks.{webhook_uuid}.read",
        params: webhookParam,
        responses: { 200: { description: "The webhook", schema: webhookSchema }, 404: "No such webhook" },
      },
      async ({ c, app, caller, params }) =>
        c.json(webhookJson(await requireVisibleWebhook(app, caller, params.webhook_uuid))),
    )
    .put(
      "/webhooks/{webhook_uuid}",
      {
        summary: "Replace a webhook's URL, events, description and state (enabling it again resets its failure streak)",
        acl: "auth.webhooks.{webhook_uuid}.update",
        params: webhookParam,
        body,
        // A Tessera resource: no wazo-auth client expects its PUT to answer 200 (put_responses: wazo).
        responses: { 204: "Updated", 400: "Invalid body or a refused URL", 404: "No such webhook" },
      },
      async ({ c, app, caller, params, body }) => {
        await updateWebhook(app, caller, params.webhook_uuid, body);
        return c.body(null, 204);
      },
    )
    .delete(
      "/webhooks/{webhook_uuid}",
      {
        summary: "Delete a webhook, its pending deliveries and its log",
        acl: "auth.webhooks.{webhook_uuid}.delete",
        params: webhookParam,
        responses: { 204: "Deleted or absent" },
      },
      async ({ c, app, caller, params }) => {
        await deleteWebhook(app, caller, params.webhook_uuid);
        return c.body(null, 204);
      },
    )
    .post(
      "/webhooks/{webhook_uuid}/secret",
      {
        summary: "Rotate a webhook's signing secret",
        description:
          "The new secret is in this answer only. Until `previous_secret_expires_at` (`webhooks.secret_grace_seconds`), deliveries carry a signature by each secret, so receivers can switch at their pace.",
        acl: "auth.webhooks.{webhook_uuid}.secret.update",
        params: webhookParam,
        responses: {
          200: {
            description: "The new secret",
            schema: z.object({ secret: z.string(), previous_secret_expires_at: z.string().nullable() }),
          },
          404: "No such webhook",
        },
      },
      async ({ c, app, caller, params }) => c.json(await rotateWebhookSecret(app, caller, params.webhook_uuid)),
    )
    .get(
      "/webhooks/{webhook_uuid}/deliveries",
      {
        summary: "A webhook's delivery log, in the order recorded (`direction=desc`: newest first)",
        description:
          "Each delivery: its status (`pending`, `delivered`, `failed`: given up after `outbound_delivery.max_age_seconds`, `dropped`: the webhook was disabled), attempts, the last response code, error and latency. Finished deliveries are kept `outbound_delivery.retention_days`.",
        acl: "auth.webhooks.{webhook_uuid}.deliveries.read",
        params: webhookParam,
        query: deliveryList,
        responses: {
          200: { description: "`{items, filtered, total}`", schema: deliveryListSchema },
          400: "Invalid list parameter",
          404: "No such webhook",
        },
      },
      async ({ c, app, caller, params, query }) =>
        c.json(await listWebhookDeliveries(app, caller, params.webhook_uuid, query)),
    )
    .post(
      "/webhooks/{webhook_uuid}/deliveries/{delivery_uuid}/redeliver",
      {
        summary: "Send a logged delivery again (same `webhook-id`, signed afresh)",
        acl: "auth.webhooks.{webhook_uuid}.deliveries.create",
        params: deliveryParams,
        responses: {
          202: { description: "Queued", schema: queuedSchema },
          404: "No such webhook or delivery",
        },
      },
      async ({ c, app, caller, params }) =>
        c.json(await redeliver(app, caller, params.webhook_uuid, params.delivery_uuid), 202),
    )
    .post(
      "/webhooks/{webhook_uuid}/ping",
      {
        summary: "Send a test event (`webhook_ping`) to the webhook, whatever its filter or state",
        acl: "auth.webhooks.{webhook_uuid}.ping.create",
        params: webhookParam,
        responses: { 202: { description: "Queued", schema: queuedSchema }, 404: "No such webhook" },
      },
      async ({ c, app, caller, params }) => c.json(await pingWebhook(app, caller, params.webhook_uuid), 202),
    );
}
