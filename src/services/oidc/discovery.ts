// Provider metadata (OpenID Connect Discovery 1.0 §3, RFC 8414 §2). It lists only what this
// provider really implements: an endpoint or capability is added here in the commit that builds it.
import { DPOP_SIGNING_ALGS } from "./dpop.ts";
import type { AppContext } from "../../boot/context.ts";
import { GRANT_TYPES } from "./grants/index.ts";
import { SIGNING_ALGS } from "./keys.ts";
import { REQUEST_OBJECT_ALGS } from "./request-object.ts";

/**
 * The issuer identifier (Discovery §3 `issuer`, OIDC Core §2 `iss`): `{public_url}/0.1/oidc`, so a
 * deployment behind a path prefix keeps working. Without `public_url` it is made from the request
 * (`origin`, X-Script-Name), which anyone can forge: production sets `public_url`.
 */
export function issuerOf(app: AppContext, requestOrigin: string, scriptName: string | undefined): string {
  const base = app.config.public_url ?? `${requestOrigin}${scriptName ?? ""}`;
  return `${base.replace(/\/+$/, "")}/0.1/oidc`;
}

/**
 * Back-Channel Logout 1.0 §2.1, Front-Channel Logout 1.0 §3: what logout reaches. A logout token is
 * sent after the request that ended the session, so it names the issuer `public_url` gives; without
 * it back-channel logout is not offered (backchannel.ts).
 */
export function logoutMetadata(app: AppContext): Record<string, boolean> {
  const backchannel = app.config.public_url != null;
  return {
    backchannel_logout_supported: backchannel,
    backchannel_logout_session_supported: backchannel,
    frontchannel_logout_supported: true,
    frontchannel_logout_session_supported: true,
  };
}

export function providerMetadata(issuer: string, app: AppContext): Record<string, unknown> {
  return {
    issuer,
    jwks_uri: `${issuer}/jwks`,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    userinfo_endpoint: `${issuer}/userinfo`,
    introspection_endpoint: `${issuer}/introspect`,
    revocation_endpoint: `${issuer}/revoke`,
    // OpenID Connect RP-Initiated Logout 1.0 §2.1.
    end_session_endpoint: `${issuer}/logout`,
    ...logoutMetadata(app),
    device_authorization_endpoint: `${issuer}/device_authorization`,
    // RFC 7591 §3: registration with an initial access token (open registration is off).
    registration_endpoint: `${issuer}/register`,
    // RFC 9126 §5: pushed authorization requests; a client may be required to use them (`require_pushed_authorization_requests`).
    pushed_authorization_request_endpoint: `${issuer}/par`,
    require_pushed_authorization_requests: false,
    // RFC 9449 §5.1: DPoP proofs at the token endpoint (and userinfo), with these algorithms.
    dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGS],
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    // The registry's grants (grants/index.ts): implicit and password are not offered (RFC 9700 §2.1.2, §2.4).
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    // OIDC Core §3.1.2.1 (listed as in Initiating User Registration 1.0 §4): `select_account` shows the form.
    prompt_values_supported: ["none", "login", "consent", "select_account"],
    // RFC 9207: the authorization response carries `iss`.
    authorization_response_iss_parameter_supported: true,
    // RFC 9101: request objects signed by the client's registered keys (jwks or jwks_uri).
    request_parameter_supported: true,
    request_object_signing_alg_values_supported: [...REQUEST_OBJECT_ALGS],
    // Discovery §3: request_uri support defaults to true; only the pushed ones (RFC 9126) are accepted.
    request_uri_parameter_supported: false,
    // Discovery §3: REQUIRED fields that describe what ID tokens will look like.
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    // Besides these, `acl:<pattern>` scopes narrow a token's ACL (acl-scope.ts); they are not listable.
    scopes_supported: ["openid", "profile", "email", "offline_access"],
    claims_supported: [
      "iss",
      "sub",
      "aud",
      "exp",
      "iat",
      "auth_time",
      "nonce",
      "at_hash",
      "amr",
      "sid",
      "tenant_uuid",
      "name",
      "given_name",
      "family_name",
      "preferred_username",
      "email",
      "email_verified",
    ],
  };
}

/** RFC 9728 §3.1: where a resource's metadata lives, `/.well-known/oauth-protected-resource` inserted before its path. */
export function protectedResourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname.replace(/\/$/, "")}`;
}

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728 §2) of Tessera's own REST API: its identifier
 * (`{public_url}/0.1`, the value of `resource` that asks for its usual token), the authorization
 * server that issues its tokens, and how they are presented.
 */
export function protectedResourceMetadata(issuer: string): Record<string, unknown> {
  const resource = issuer.replace(/\/oidc$/, "");
  return {
    resource,
    authorization_servers: [issuer],
    // The REST API reads X-Auth-Token, or the Authorization header's Bearer token (RFC 6750 §2.1).
    bearer_methods_supported: ["header"],
    resource_name: "Tessera",
    resource_documentation: `${resource}/api/docs`,
  };
}
