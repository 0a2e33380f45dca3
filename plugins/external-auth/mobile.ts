// Stock external-auth plugin `mobile` (wazo-auth's external-auth plugins): the push-notification tokens of a
// user's mobile device, and the FCM sender id of the tenant's mobile configuration.
import { z } from "zod";
import {
  type ExternalAuthPlugin,
  type ExternalAuthServices,
  type ExternalRequest,
  InvalidData,
  NotFound,
  zodDetails,
} from "../../src/plugins/sdk.ts";

const field = z.string().max(512).nullable().optional();
const mobileData = z.object({
  token: z.string().min(1).max(512).nullable().optional(),
  apns_token: field,
  apns_voip_token: field,
  apns_notification_token: field,
  apns_call_topic: field,
  apns_default_topic: field,
});
const KEYS = [
  "token",
  "apns_token",
  "apns_voip_token",
  "apns_notification_token",
  "apns_call_topic",
  "apns_default_topic",
] as const;

function parse(body: unknown): Record<string, string | null> {
  const r = mobileData.safeParse(body ?? {});
  if (!r.success) throw new InvalidData("users", zodDetails(r.error, mobileData, body));
  return Object.fromEntries(KEYS.map((k) => [k, r.data[k] ?? null]));
}

export default class MobilePlugin implements ExternalAuthPlugin {
  private services!: ExternalAuthServices;
  pluginInfo = {};

  load(services: ExternalAuthServices): void {
    this.services = services;
  }

  routes = {
    post: async (req: ExternalRequest) => {
      const data = parse(req.body);
      await this.services.createData(req.userUuid, data);
      return { status: 201, body: data };
    },
    put: async (req: ExternalRequest) => {
      const data = parse(req.body);
      await this.services.updateData(req.userUuid, data, true);
      return { status: 200, body: data };
    },
    get: async (req: ExternalRequest) => {
      const data = await this.services.getData(req.userUuid);
      if (!data) throw new NotFound("mobile", req.userUuid, 'No "mobile" data for this user');
      return { status: 200, body: Object.fromEntries(KEYS.map((k) => [k, data[k] ?? null])) };
    },
    delete: async (req: ExternalRequest) => {
      await this.services.deleteData(req.userUuid);
      return { status: 204 };
    },
    extra: [
      {
        method: "get" as const,
        path: "/sender_id",
        access: "sender_id.read",
        summary: "The FCM sender id of the user's tenant",
        handler: async (req: ExternalRequest) => {
          const config = await this.services.getConfig(req.tenantUuid);
          if (!config) throw new NotFound("mobile", req.tenantUuid, 'No "mobile" configuration for this tenant');
          return { status: 200, body: { sender_id: (config.fcm_sender_id as string | undefined) ?? null } };
        },
      },
    ],
  };
}
