// Dynamic Client Registration (RFC 7591) and its management protocol (RFC 7592). Open registration
// is off: a client registers itself with an initial access token (initial-access-tokens.ts), which
// decides its tenant and the grant types it may use. A self-registered client is third-party (its
// users are asked for consent), has no ACL of its own and never plain-http redirect URIs off
// loopback; it appears in its tenant's administration like any other client. It is then read,
// replaced and deleted with the registration access token given at registration, stored hashed.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { eq } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcClients, oidcInitialAccessTokens } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { InvalidData } from "../../domain/errors.ts";
import { isUuid } from "../../domain/validate.ts";
import { type AuditActor, recordAudit, resourceAudit } from "../audit/record.ts";
import {
  checkClientKeys,
  clientEvent,
  clientJson,
  type ClientInput,
  type ClientRow,
  clientTarget,
  type ClientType,
  DEFAULT_SCOPES,
  forgetAfterCommit,
  hashClientSecret,
  removeClient,
  rowValues,
} from "./clients.ts";
import { GRANT_TYPES } from "./grants/index.ts";
import { spendInitialAccessToken } from "./initial-access-tokens.ts";
import { SIGNING_ALGS } from "./keys.ts";
import { logoutMetadataFromJson, logoutMetadataJson, logoutMetadataValues } from "./logout-metadata.ts";
import { OAuthError } from "./oauth-error.ts";
import { isInsecureRedirectUri, redirectUriProblem } from "./redirect-uris.ts";
import { REQUEST_OBJECT_ALGS } from "./request-object.ts";

/** RFC 7591 §2 `token_endpoint_auth_method` values Tessera verifies. */
const AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"] as const;
/** RFC 7591 §2 metadata kept and shown as registered, not interpreted. */
const INFORMATIONAL_URIS = ["client_uri", "logo_uri", "tos_uri", "policy_uri"] as const;
const INFORMATIONAL_STRINGS = ["software_id", "software_version"] as const;
/** Tessera's administration fields that registration never sets (the policy of the issue: third-party, no ACL). */
const ADMIN_ONLY = [
  "first_party",
  "acl",
  "allow_insecure_redirects",
  "access_token_lifetime",
  "refresh_token_lifetime",
];
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;

/** Where a registration request came from (the protocol door's request origin). */
export interface RegistrationOrigin {
  userAgent: string;
  remoteAddr: string;
}
type RequestOrigin = RegistrationOrigin;

/** The audit actor of a client acting on its own registration: no user, the request's address. */
const clientActor = (origin: RequestOrigin, tenantUuid: string): AuditActor => ({
  userUuid: null,
  sessionUuid: null,
  tenantUuid,
  address: origin.remoteAddr,
  userAgent: origin.userAgent || null,
});

const hash = (token: string) => createHash("sha256").update(token).digest("hex");
const metadataError = (description: string) => new OAuthError(400, "invalid_client_metadata", description);
const redirectError = (description: string) => new OAuthError(400, "invalid_redirect_uri", description);
const invalidToken = (description: string) => new OAuthError(401, "invalid_token", description);

interface Parsed {
  input: ClientInput;
  /** What the row keeps beside the client's fields (RFC 7591 §2 informational metadata). */
  metadata: Record<string, unknown>;
}

function stringArray(body: Record<string, unknown>, field: string, max: number): string[] | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length > max || !v.every((e) => typeof e === "string" && e.length <= 2_048))
    throw metadataError(`${field} must be an array of at most ${max} strings`);
  return v as string[];
}

function redirectUris(body: Record<string, unknown>, field: string, error: (d: string) => OAuthError): string[] {
  const uris = stringArray(body, field, 32) ?? [];
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw error(`${field}: ${uri}: ${problem.message}`);
    // RFC 6749 §3.1.2.1, RFC 8252 §8.3: no plain http off loopback for a client nobody vetted.
    if (isInsecureRedirectUri(uri))
      throw error(`${field}: ${uri}: plain http is allowed on 127.0.0.1 or [::1] only (RFC 8252 §7.3)`);
  }
  return uris;
}

/**
 * RFC 7591 §2: the metadata, checked field by field (errors per §3.2.2), within what the initial
 * access token allows (`allowedGrants`). Unknown fields are ignored (§2).
 */
function parseMetadata(app: AppContext, raw: unknown, allowedGrants: string[]): Parsed {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw metadataError("the body must be a JSON object of client metadata (RFC 7591 §2)");
  const body = raw as Record<string, unknown>;
  const adminOnly = ADMIN_ONLY.find((f) => body[f] !== undefined);
  if (adminOnly)
    throw metadataError(`${adminOnly} cannot be registered: a self-registered client is third-party, with no ACL`);
  const redirects = redirectUris(body, "redirect_uris", redirectError);
  const postLogout = redirectUris(body, "post_logout_redirect_uris", metadataError);
  const method = body.token_endpoint_auth_method ?? "client_secret_basic";
  if (!AUTH_METHODS.includes(method as (typeof AUTH_METHODS)[number]))
    throw metadataError(`token_endpoint_auth_method must be one of ${AUTH_METHODS.join(", ")}`);
  const grants = [...new Set(stringArray(body, "grant_types", 8) ?? ["authorization_code"])];
  if (grants.length === 0) throw metadataError("grant_types cannot be empty");
  for (const g of grants) {
    if (!(GRANT_TYPES as readonly string[]).includes(g)) throw metadataError(`grant type not supported: ${g}`);
    if (!allowedGrants.includes(g)) throw metadataError(`grant type not allowed by the initial access token: ${g}`);
  }
  // §2.1: response types and grant types must agree; only `code` is offered.
  const responses = [
    ...new Set(stringArray(body, "response_types", 4) ?? (grants.includes("authorization_code") ? ["code"] : [])),
  ];
  if (responses.some((r) => r !== "code")) throw metadataError("only the response type code is supported");
  if (responses.includes("code") !== grants.includes("authorization_code"))
    throw metadataError("response_types code and grant_types authorization_code go together (RFC 7591 §2.1)");
  let scopes = DEFAULT_SCOPES;
  if (body.scope !== undefined) {
    if (typeof body.scope !== "string") throw metadataError("scope must be a space-separated string");
    scopes = [...new Set(body.scope.split(" ").filter(Boolean))];
    if (scopes.length > 64 || scopes.some((s) => !SCOPE_TOKEN.test(s))) throw metadataError("scope is malformed");
  }
  let name = "Unnamed client";
  if (body.client_name !== undefined) {
    if (typeof body.client_name !== "string" || !body.client_name.trim() || body.client_name.length > 128)
      throw metadataError("client_name must be a string of 1 to 128 characters");
    name = body.client_name.trim();
  }
  const alg = body.id_token_signed_response_alg;
  if (alg !== undefined && !(SIGNING_ALGS as readonly unknown[]).includes(alg))
    throw metadataError(`id_token_signed_response_alg must be one of ${SIGNING_ALGS.join(", ")}`);
  const requestAlg = body.request_object_signing_alg;
  if (requestAlg !== undefined && !(REQUEST_OBJECT_ALGS as readonly unknown[]).includes(requestAlg))
    throw metadataError(`request_object_signing_alg must be one of ${REQUEST_OBJECT_ALGS.join(", ")}`);
  const requirePar = body.require_pushed_authorization_requests;
  if (requirePar !== undefined && typeof requirePar !== "boolean")
    throw metadataError("require_pushed_authorization_requests must be a boolean");
  const dpopBound = body.dpop_bound_access_tokens;
  if (dpopBound !== undefined && typeof dpopBound !== "boolean")
    throw metadataError("dpop_bound_access_tokens must be a boolean");
  if (body.jwks !== undefined && (typeof body.jwks !== "object" || body.jwks === null))
    throw metadataError("jwks must be a JWK Set");
  if (body.jwks_uri !== undefined && typeof body.jwks_uri !== "string") throw metadataError("jwks_uri must be a URL");
  const metadata: Record<string, unknown> = { token_endpoint_auth_method: method, response_types: responses };
  if (requestAlg !== undefined) metadata.request_object_signing_alg = requestAlg;
  for (const f of INFORMATIONAL_URIS) {
    const v = body[f];
    if (v === undefined) continue;
    if (typeof v !== "string" || v.length > 2_048 || !/^https:\/\/[^\s]+$/.test(v))
      throw metadataError(`${f} must be an https URL`);
    metadata[f] = v;
  }
  for (const f of INFORMATIONAL_STRINGS) {
    const v = body[f];
    if (v === undefined) continue;
    if (typeof v !== "string" || v.length > 255) throw metadataError(`${f} must be a string of at most 255 characters`);
    metadata[f] = v;
  }
  const contacts = stringArray(body, "contacts", 10);
  if (contacts) metadata.contacts = contacts;
  const input: ClientInput = {
    name,
    client_type: method === "none" ? "public" : "confidential",
    redirect_uris: redirects,
    post_logout_redirect_uris: postLogout,
    grant_types: grants,
    scopes,
    first_party: false,
    allow_insecure_redirects: false,
    id_token_signed_response_alg: alg as ClientInput["id_token_signed_response_alg"],
    acl: [],
    require_pushed_authorization_requests: requirePar ?? false,
    dpop_bound_access_tokens: dpopBound ?? false,
    jwks: (body.jwks as ClientInput["jwks"]) ?? null,
    jwks_uri: (body.jwks_uri as string | undefined) ?? null,
  };
  try {
    // Back- and front-channel logout URIs (OpenID Connect Back-Channel Logout 1.0 §2.2, Front-Channel
    // Logout 1.0 §2): outbound URLs the client chooses, checked as an administrator's would be.
    Object.assign(input, logoutMetadataFromJson(body));
    // The rules every client follows (clients.ts), in RFC 7591 §3.2.2's terms.
    const values = rowValues(input, input.client_type, false);
    logoutMetadataValues(app, input, values.redirectUris);
    checkClientKeys(app, input);
  } catch (e) {
    if (!(e instanceof InvalidData)) throw e;
    const details = (e.details ?? {}) as Record<string, { message?: string }>;
    const [field, detail] = Object.entries(details)[0] ?? ["metadata", {}];
    const message = `${field}: ${detail.message ?? "invalid"}`;
    throw field === "redirect_uris" ? redirectError(message) : metadataError(message);
  }
  return { input, metadata };
}

/** RFC 7591 §3.2.1 (and RFC 7592 §3): the client's registered metadata, with what was issued. */
function registrationResponse(
  row: ClientRow,
  issuer: string,
  issued: { client_secret?: string; registration_access_token?: string } = {},
): Record<string, unknown> {
  const meta = row.registrationMetadata ?? {};
  const confidential = row.clientType === "confidential";
  return {
    client_id: row.clientId,
    ...(issued.client_secret ? { client_secret: issued.client_secret } : {}),
    client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
    ...(confidential ? { client_secret_expires_at: 0 } : {}),
    ...(issued.registration_access_token ? { registration_access_token: issued.registration_access_token } : {}),
    registration_client_uri: `${issuer}/register/${row.clientId}`,
    client_name: row.name,
    redirect_uris: row.redirectUris,
    post_logout_redirect_uris: row.postLogoutRedirectUris,
    grant_types: row.grantTypes,
    response_types: row.grantTypes.includes("authorization_code") ? ["code"] : [],
    token_endpoint_auth_method: confidential ? (meta.token_endpoint_auth_method ?? "client_secret_basic") : "none",
    scope: row.scopes.join(" "),
    id_token_signed_response_alg: row.idTokenSignedResponseAlg,
    require_pushed_authorization_requests: row.requirePushedAuthorizationRequests,
    dpop_bound_access_tokens: row.dpopBoundAccessTokens,
    ...(row.jwks ? { jwks: row.jwks } : {}),
    ...(row.jwksUri ? { jwks_uri: row.jwksUri } : {}),
    ...Object.fromEntries(
      Object.entries(logoutMetadataJson(row)).filter(
        ([k, v]) => v !== null && !(k.endsWith("_required") && v === false),
      ),
    ),
    ...Object.fromEntries(
      Object.entries(meta).filter(([k]) => k !== "token_endpoint_auth_method" && k !== "response_types"),
    ),
  };
}

const bearerOf = (authorization: string | undefined) => /^bearer\s+(\S+)$/i.exec(authorization ?? "")?.[1];

/** RFC 7591 §3.1: registers a client with an initial access token (RFC 6750 §2.1 Bearer). */
export async function registerClient(
  app: AppContext,
  authorization: string | undefined,
  body: unknown,
  issuer: string,
  origin: RequestOrigin,
): Promise<Record<string, unknown>> {
  const initial = bearerOf(authorization);
  if (!initial)
    throw invalidToken(
      "an initial access token is required: open registration is off (ask the tenant's administrator)",
    );
  return inTransaction(app, async (tx) => {
    // Spent in this transaction: a refused registration gives the use back.
    const token = await spendInitialAccessToken(tx, initial);
    if (!token) throw invalidToken("the initial access token is unknown, expired or used up");
    const { input, metadata } = parseMetadata(app, body, token.grantTypes);
    const values = rowValues(input, input.client_type, false);
    const secret = input.client_type === "confidential" ? randomBytes(32).toString("base64url") : null;
    const registrationToken = randomBytes(32).toString("base64url");
    const [row] = await tx
      .insert(oidcClients)
      .values({
        ...values,
        ...logoutMetadataValues(app, input, values.redirectUris),
        clientId: randomUUID(),
        tenantUuid: token.tenantUuid,
        clientType: input.client_type,
        secretHash: secret ? hashClientSecret(secret) : null,
        idTokenSignedResponseAlg: input.id_token_signed_response_alg ?? app.config.oidc.default_signing_alg,
        registrationTokenHash: hash(registrationToken),
        registeredWith: token.uuid,
        registrationMetadata: metadata,
      })
      .returning();
    await clientEvent(app, tx, "created", row!);
    await recordAudit(
      app,
      tx,
      clientActor(origin, token.tenantUuid),
      resourceAudit("oidc_client.register", clientTarget(row!), null, clientJson(row!)),
    );
    return registrationResponse(row!, issuer, {
      ...(secret ? { client_secret: secret } : {}),
      registration_access_token: registrationToken,
    });
  });
}

/**
 * RFC 7592 §2: the client the registration access token was issued for. Any mismatch — no token,
 * another client's, a client registered by an administrator, a deleted client — is the same 401.
 */
async function registeredClient(app: AppContext, clientId: string, authorization: string | undefined) {
  const presented = bearerOf(authorization);
  if (!presented) throw invalidToken("the registration access token is required");
  const [row] = isUuid(clientId)
    ? await app.db.select().from(oidcClients).where(eq(oidcClients.clientId, clientId.toLowerCase()))
    : [];
  const ok =
    row?.registrationTokenHash &&
    timingSafeEqual(Buffer.from(hash(presented), "hex"), Buffer.from(row.registrationTokenHash, "hex"));
  if (!row || !ok) throw invalidToken("the registration access token is invalid for this client");
  return row;
}

/** RFC 7592 §2.1: the client's current registration. */
export async function readRegistration(
  app: AppContext,
  clientId: string,
  authorization: string | undefined,
  issuer: string,
): Promise<Record<string, unknown>> {
  return registrationResponse(await registeredClient(app, clientId, authorization), issuer);
}

/** RFC 7592 §2.2: the client replaces its metadata (fields left out take their defaults). */
export async function updateRegistration(
  app: AppContext,
  clientId: string,
  authorization: string | undefined,
  body: unknown,
  issuer: string,
  origin: RequestOrigin,
): Promise<Record<string, unknown>> {
  const current = await registeredClient(app, clientId, authorization);
  const fields = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  // §2.2: the body names the client; a secret it carries must be its own (it cannot set one).
  if (fields.client_id !== current.clientId)
    throw new OAuthError(400, "invalid_request", "client_id must be given and be this client's");
  if (fields.client_secret !== undefined) {
    if (typeof fields.client_secret !== "string" || !current.secretHash)
      throw metadataError("client_secret cannot be set");
    const presented = Buffer.from(hashClientSecret(fields.client_secret), "hex");
    if (!timingSafeEqual(presented, Buffer.from(current.secretHash, "hex")))
      throw metadataError("client_secret cannot be set");
  }
  const rest = Object.fromEntries(
    Object.entries(fields).filter(
      ([k]) =>
        ![
          "client_id",
          "client_secret",
          "registration_access_token",
          "registration_client_uri",
          "client_id_issued_at",
          "client_secret_expires_at",
        ].includes(k),
    ),
  );
  return inTransaction(app, async (tx) => {
    // The policy of the initial access token it came with; once that is revoked, no more than it has.
    const [token] = current.registeredWith
      ? await tx.select().from(oidcInitialAccessTokens).where(eq(oidcInitialAccessTokens.uuid, current.registeredWith))
      : [];
    const { input, metadata } = parseMetadata(app, rest, token?.grantTypes ?? current.grantTypes);
    if (input.client_type !== (current.clientType as ClientType))
      throw metadataError("token_endpoint_auth_method cannot change between none and a secret: register a new client");
    const values = rowValues(input, input.client_type, false);
    const [row] = await tx
      .update(oidcClients)
      .set({
        ...values,
        // RFC 7592 §2.2: the request replaces every field, so an absent logout URI is removed.
        ...logoutMetadataValues(app, input, values.redirectUris),
        idTokenSignedResponseAlg: input.id_token_signed_response_alg ?? current.idTokenSignedResponseAlg,
        registrationMetadata: metadata,
      })
      .where(eq(oidcClients.clientId, current.clientId))
      .returning();
    forgetAfterCommit(app, tx, current.clientId);
    await clientEvent(app, tx, "updated", row!);
    await recordAudit(
      app,
      tx,
      clientActor(origin, current.tenantUuid),
      resourceAudit("oidc_client.register_update", clientTarget(row!), clientJson(current), clientJson(row!)),
    );
    return registrationResponse(row!, issuer);
  });
}

/** RFC 7592 §2.3: the client deregisters; what it was given goes with it (as an administrator's deletion). */
export async function deleteRegistration(
  app: AppContext,
  clientId: string,
  authorization: string | undefined,
  origin: RequestOrigin,
): Promise<void> {
  const row = await registeredClient(app, clientId, authorization);
  await inTransaction(app, (tx) =>
    removeClient(app, tx, row, clientActor(origin, row.tenantUuid), "oidc_client.register_delete"),
  );
}
