// Client authentication at the token endpoint (RFC 6749 §2.3), shared by the token, device
// authorization, introspection and revocation endpoints. The grants themselves are the registry's
// (grants/index.ts).
import { isUuid } from "../../domain/validate.ts";
import type { AppContext } from "../../boot/context.ts";
import { recordRefusalEntry } from "../audit/record.ts";
import {
  clientForAuthentication,
  clientSecretMatches,
  type ClientRow,
  rememberVerifiedBasic,
  verifiedBasicClient,
} from "./clients.ts";
import { invalidClient, OAuthError } from "./oauth-error.ts";
import { clientActor, type Form, type RequestOrigin } from "./grants.ts";

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded before base64. */
function basicClient(header: string | undefined): { id: string; secret: string } | null {
  if (!header || !/^basic\s+/i.test(header)) return null;
  const decoded = Buffer.from(header.replace(/^basic\s+/i, "").trim(), "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) return null;
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, i).replaceAll("+", " ")),
      secret: decodeURIComponent(decoded.slice(i + 1).replaceAll("+", " ")),
    };
  } catch {
    return null;
  }
}

/**
 * The calling client (RFC 6749 §2.3): `client_secret_basic` or `client_secret_post` for a
 * confidential client, `client_id` alone for a public one. One method per request (§2.3).
 */
export async function authenticateClient(
  app: AppContext,
  authorization: string | undefined,
  form: Form,
  origin?: RequestOrigin,
): Promise<ClientRow> {
  const bare = form.client_id === undefined && form.client_secret === undefined;
  if (authorization !== undefined && bare) {
    const known = verifiedBasicClient(app, authorization);
    if (known) return known;
  }
  const basic = basicClient(authorization);
  if (basic && form.client_secret !== undefined)
    throw new OAuthError(400, "invalid_request", "use one client authentication method");
  if (basic && form.client_id !== undefined && form.client_id !== basic.id)
    throw new OAuthError(400, "invalid_request", "client_id does not match the credentials");
  const id = basic?.id ?? form.client_id ?? "";
  const secret = basic?.secret ?? form.client_secret;
  const client = isUuid(id) ? await clientForAuthentication(app, id.toLowerCase()) : null;
  if (!client) throw await refusedClient(app, id, null, origin);
  if (client.clientType === "confidential") {
    if (secret === undefined || !clientSecretMatches(client, secret))
      throw await refusedClient(app, id, client, origin);
    if (basic && bare) rememberVerifiedBasic(app, authorization!, client);
  } else if (secret !== undefined && secret !== "") {
    throw invalidClient(); // a public client has no secret to present
  }
  return client;
}

/**
 * A client that failed to authenticate: `invalid_client`, recorded (with `origin`, the token and
 * revocation endpoints' calls) as a refused login of the client — a guessed secret is a guessed
 * password. Recorded apart from the answer: when even that fails (an outage) the refusal stands.
 */
async function refusedClient(
  app: AppContext,
  id: string,
  client: ClientRow | null,
  origin: RequestOrigin | undefined,
): Promise<OAuthError> {
  if (origin) {
    await recordRefusalEntry(app, clientActor(origin, client?.tenantUuid ?? null), {
      action: "login.failure",
      outcome: "invalid_credentials",
      target: { kind: "oidc_client", uuid: client?.clientId ?? null, tenantUuid: client?.tenantUuid ?? null },
      changes: [{ field: "client_id", old: null, new: id.replaceAll("\0", "\uFFFD").slice(0, 64) }],
    });
  }
  return invalidClient();
}
