// External-auth plugins (docs/plugins.md): a plugin links a user to an external service and
// keeps that service's credentials. Tessera mounts its handlers under
// `/0.1/users/{user_uuid}/external/{auth_type}` with ACLs
// `auth.users.{user_uuid}.external.<auth_type>.<create|read|update|delete>`, after checking the
// caller may see the user (D9 of docs/wazo-auth-differences.md). Plugins get services, never the database.
import type { z } from "zod";
import type { Logger } from "../observe/log.ts";

export interface ExternalRequest {
  userUuid: string;
  /** The user's tenant (where the per-tenant config is looked up). */
  tenantUuid: string;
  body: unknown;
  query: Record<string, string>;
}

export interface ExternalResponse {
  status: number;
  body?: unknown;
}

export type ExternalHandler = (req: ExternalRequest) => Promise<ExternalResponse>;

export interface ExternalAuthServices {
  authType: string;
  log: Logger;
  /** The user's stored record, or null. */
  getData(userUuid: string): Promise<Record<string, unknown> | null>;
  /** Creates the record; 409 `conflict` when one exists. Emits `auth_user_external_auth_added`. */
  createData(userUuid: string, data: Record<string, unknown>): Promise<void>;
  /** Replaces (or, with `upsert`, creates) the record. Emits `..._updated` (or `..._added`). */
  updateData(userUuid: string, data: Record<string, unknown>, upsert?: boolean): Promise<void>;
  /** Deletes the record; 404 when there is none. Emits `..._deleted`. */
  deleteData(userUuid: string): Promise<void>;
  /** The tenant's configuration of this type (`/0.1/external/{type}/config`), or null. */
  getConfig(tenantUuid: string): Promise<Record<string, unknown> | null>;
  /** INTERFACE §1.2: run `callback(...extra, message)` when the provider redirects back with `state`. */
  registerOAuth2Callback(
    userUuid: string,
    state: string,
    callback: (...args: unknown[]) => Promise<void> | void,
    ...extra: unknown[]
  ): Promise<void>;
  /** The redirect URL to give the provider; Tessera serves it. */
  buildOAuth2RedirectUrl(): string;
}

export interface ExternalAuthPlugin {
  /** Called once at start with the services bound to this plugin's auth type. */
  load?(services: ExternalAuthServices): void | Promise<void>;
  routes: {
    post?: ExternalHandler;
    get?: ExternalHandler;
    put?: ExternalHandler;
    delete?: ExternalHandler;
    /** Sub-routes such as mobile's `/sender_id`: `path` is appended, `access` to the ACL (`sender_id.read`). */
    extra?: Array<{
      method: "get" | "post" | "put" | "delete";
      path: string;
      access: string;
      handler: ExternalHandler;
      summary?: string;
    }>;
  };
  /** What an unprivileged listing may show of the stored record (`GET /users/{u}/external`). */
  safeView?: z.ZodType;
  /** Static information shown in the listing, e.g. `{required_acl: [...]}`. */
  pluginInfo?: Record<string, unknown>;
  /** Fallback for OAuth2 redirects that land on an instance that did not register the callback. */
  oauth2Callback?: (userUuid: string, message: Record<string, string>, ...extra: unknown[]) => Promise<void>;
}
