// A client's logout metadata: OpenID Connect Back-Channel Logout 1.0 §2.2 (`backchannel_logout_uri`,
// `backchannel_logout_session_required`) and Front-Channel Logout 1.0 §2 (`frontchannel_logout_uri`,
// `frontchannel_logout_session_required`). One place for the administration API and Dynamic Client
// Registration: the fields, their checks, their stored columns and their JSON.
//
// A back-channel URI is called by Tessera itself (backchannel.ts), so it is an outbound URL a tenant
// administrator or a self-registered client chose: `urlRefusal` under `outbound_http` (https only
// unless `allow_http`; loopback, private, link-local and metadata addresses refused unless
// `allow_private_targets` admits them), checked again at every call. A front-channel URI is loaded
// by the user's browser in a frame, and is held to the same rule.
import type { AppContext } from "../../boot/context.ts";
import type { oidcClients } from "../../db/schema.ts";
import { InvalidData } from "../../domain/errors.ts";
import { outboundPolicy, urlRefusal } from "../outbound/fetch.ts";

type Row = typeof oidcClients.$inferSelect;

/** What a client body may say (absent on update: unchanged; `null`: removed). */
export interface LogoutMetadataInput {
  backchannel_logout_uri?: string | null;
  backchannel_logout_session_required?: boolean;
  frontchannel_logout_uri?: string | null;
  frontchannel_logout_session_required?: boolean;
}

export interface LogoutMetadataJson {
  backchannel_logout_uri: string | null;
  backchannel_logout_session_required: boolean;
  frontchannel_logout_uri: string | null;
  frontchannel_logout_session_required: boolean;
}

export type LogoutMetadataValues = Pick<
  Row,
  | "backchannelLogoutUri"
  | "backchannelLogoutSessionRequired"
  | "frontchannelLogoutUri"
  | "frontchannelLogoutSessionRequired"
>;

export function logoutMetadataJson(r: LogoutMetadataValues): LogoutMetadataJson {
  return {
    backchannel_logout_uri: r.backchannelLogoutUri,
    backchannel_logout_session_required: r.backchannelLogoutSessionRequired,
    frontchannel_logout_uri: r.frontchannelLogoutUri,
    frontchannel_logout_session_required: r.frontchannelLogoutSessionRequired,
  };
}

export const LOGOUT_URI_MAX = 2_048;

const refused = (field: string, constraintId: string, constraint: unknown, message: string) =>
  new InvalidData("oidc_clients", { [field]: { constraint_id: constraintId, constraint, message } });

/** Why `uri` cannot be a logout URI of this service (null: it can); `field` names it in the error. */
function checkLogoutUri(app: AppContext, field: string, uri: string): void {
  if (uri.length === 0 || uri.length > LOGOUT_URI_MAX)
    throw refused(field, "length", LOGOUT_URI_MAX, `Between 1 and ${LOGOUT_URI_MAX} characters.`);
  // Back-Channel Logout §2.2, Front-Channel Logout §2: "MUST NOT include any fragment component".
  if (uri.includes("#"))
    throw refused(field, "no_fragment", uri, "A logout URI must not contain a fragment (Back-Channel Logout §2.2).");
  const refusal = urlRefusal(uri, outboundPolicy(app.config.outbound_http));
  if (refusal) throw refused(field, "outbound_url", uri, `The logout URI ${refusal} (outbound_http).`);
}

/**
 * The stored values for `input`: each field as given, else `current`'s (an update that does not
 * name it keeps it), else the default (none, false). `redirectUris` are the client's (after the
 * change): Front-Channel Logout §2 requires the front-channel URI's scheme, host and port to be a
 * registered redirect URI's.
 */
export function logoutMetadataValues(
  app: AppContext,
  input: LogoutMetadataInput,
  redirectUris: readonly string[],
  current: LogoutMetadataValues | null = null,
): LogoutMetadataValues {
  const values: LogoutMetadataValues = {
    backchannelLogoutUri:
      input.backchannel_logout_uri === undefined
        ? (current?.backchannelLogoutUri ?? null)
        : input.backchannel_logout_uri,
    backchannelLogoutSessionRequired:
      input.backchannel_logout_session_required ?? current?.backchannelLogoutSessionRequired ?? false,
    frontchannelLogoutUri:
      input.frontchannel_logout_uri === undefined
        ? (current?.frontchannelLogoutUri ?? null)
        : input.frontchannel_logout_uri,
    frontchannelLogoutSessionRequired:
      input.frontchannel_logout_session_required ?? current?.frontchannelLogoutSessionRequired ?? false,
  };
  if (input.backchannel_logout_uri != null) checkLogoutUri(app, "backchannel_logout_uri", input.backchannel_logout_uri);
  if (input.frontchannel_logout_uri != null)
    checkLogoutUri(app, "frontchannel_logout_uri", input.frontchannel_logout_uri);
  const front = values.frontchannelLogoutUri;
  if (front !== null) {
    const origin = new URL(front).origin;
    const sameOrigin = redirectUris.some((r) => {
      try {
        return new URL(r).origin === origin;
      } catch {
        return false;
      }
    });
    if (!sameOrigin)
      throw refused(
        "frontchannel_logout_uri",
        "redirect_uri_origin",
        front,
        "The front-channel logout URI must have the scheme, host and port of a registered redirect URI (Front-Channel Logout §2).",
      );
  }
  return values;
}

/**
 * The four fields out of a raw JSON body (Dynamic Client Registration, RFC 7591 §2: metadata the
 * client sends as it likes), their types checked (InvalidData naming the field); absent fields stay
 * absent. Their values are checked by `logoutMetadataValues`.
 */
export function logoutMetadataFromJson(body: Record<string, unknown>): LogoutMetadataInput {
  const out: LogoutMetadataInput = {};
  for (const field of ["backchannel_logout_uri", "frontchannel_logout_uri"] as const) {
    const v = body[field];
    if (v === undefined) continue;
    if (v !== null && typeof v !== "string") throw refused(field, "type", "string", `${field} must be a URL.`);
    out[field] = v;
  }
  for (const field of ["backchannel_logout_session_required", "frontchannel_logout_session_required"] as const) {
    const v = body[field];
    if (v === undefined) continue;
    if (typeof v !== "boolean") throw refused(field, "type", "boolean", `${field} must be true or false.`);
    out[field] = v;
  }
  return out;
}
