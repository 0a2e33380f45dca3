// What each group of operations of the OpenAPI document is for: the text the reference page shows
// above each tag. A tag without a description fails tests/http/openapi.test.ts.
export const TAG_DESCRIPTIONS: Record<string, string> = {
  tokens:
    "Logins and the token check. `POST /token` exchanges credentials (Basic, a refresh token, or an identity provider's proof) for a token carrying an ACL; `HEAD|GET /token/{token}?scope=&tenant=` is what every other service asks on each request (204/200 valid, 403 scope refused, 404 unknown).",
  sessions:
    "Sessions: one per login, holding its tokens. Listing them shows who is signed in where; deleting one revokes its tokens on every instance.",
  users:
    "Users of a tenant: create, read, update, delete, passwords, policies attached to a user, refresh tokens per client, and the user's own view through `me`.",
  tenants:
    "The tenant tree: every resource belongs to one tenant, and an administrator sees their tenant and its sub-tenants only. Domains, parent moves, deletion.",
  groups:
    "Groups of users of one tenant; the policies of a group apply to each member. Joining a group is granted like attaching its policies.",
  policies:
    "Policies: named lists of ACL entries (with `*`, `#`, `me`, `my_session` and deny entries `!…`), attached to users and groups. No caller can grant an entry its own ACL does not cover.",
  audit:
    "The audit trail: who did what, to whom, from where — every administrative write, every login decision, token and session revocations — kept per tenant in a hash chain (see docs/audit.md).",
  emails: "Email addresses of users, their confirmation links, and the administrators' direct edit.",
  reset:
    "Password reset by mail: the request (answered the same whether the user exists or not) and the reset itself with the mailed token.",
  external:
    "External accounts linked to users (mobile push tokens, Google, Microsoft…) and their per-tenant configuration; OAuth2 callbacks are served by Tessera itself.",
  mfa: "Multi-factor authentication: a user's TOTP factor (enrol, confirm with a code to get ten single-use recovery codes, remove), through `me` or by an administrator of the user's tenant, and each tenant's MFA policy (`optional` or `required`, inherited by sub-tenants). Logins of a user with a factor then need `mfa_code`.",
  idp: "Identity providers: which login method (native, LDAP, SAML…) each user uses.",
  ldap_config: "The LDAP directory of a tenant: its users log in with their directory password.",
  saml_config:
    "The SAML identity provider of a tenant: its metadata, and this service provider's metadata and ACS URL.",
  backends_oidc:
    "Upstream OpenID Connect providers of a tenant (Entra ID, Google, Keycloak…): its users sign in with them on the hosted login page. Discovery is fetched from the issuer at creation; the client secret is never returned; the answer gives the redirect URI to register at the provider (docs/federation.md).",
  saml: "SAML single sign-on and logout, as the browser goes through them.",
  backends: "The authentication backends loaded by this service.",
  config: "The effective configuration (secrets masked) and the few settings changeable at run time.",
  status: "Liveness and the health of each component (database, bus, plugins).",
  backup:
    "A copy of the embedded database taken while the service runs (`tessera backup`); PostgreSQL is backed up with its own tools.",
  ready:
    "Readiness for load balancers: whether this instance can take traffic now (database reachable, migrations applied, cache invalidation heard, not shutting down).",
  oidc: "The OpenID Connect provider (issuer `{public_url}/0.1/oidc`): discovery, signing keys, the hosted login page (authorization code with PKCE), the token endpoint, userinfo, introspection and revocation, dynamic client registration (RFC 7591/7592) and pushed authorization requests (RFC 9126). Its access tokens are ordinary Tessera tokens.",
  oidc_clients:
    "OpenID Connect clients (relying parties) of a tenant: registered redirect URIs, grant types, scopes; a confidential client's secret is shown once, at creation.",
  oidc_resources:
    "Resource servers of a tenant (RFC 8707 resource indicators): the ACL a token for each may carry, and its format — an RFC 9068 JWT the resource verifies offline, or a Tessera token.",
  oidc_initial_access_tokens:
    "Initial access tokens of a tenant (RFC 7591 §3): with one, a client registers itself in that tenant, third-party and without ACL; shown once, at creation.",
  webhooks:
    "HTTP endpoints of a tenant subscribed to the bus events of its subtree, signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`), retried until delivered; the signing secret is shown once. Their delivery log, redelivery and a test ping.",
  scim: "SCIM 2.0 (RFC 7643, RFC 7644) service provider of a tenant, for its directory (Microsoft Entra ID, Okta): Users, Groups, the discovery endpoints. The caller is a bearer token (a SCIM token, or a Tessera token holding `auth.scim.*`) acting in its own tenant; answers and errors are application/scim+json (see docs/scim.md).",
  scim_tokens:
    "SCIM tokens of a tenant: the long-lived bearer tokens its directory provisions with. The secret is shown once, at creation; only its hash is stored. Listed, revoked, audited.",
  api: "This API's own description: the OpenAPI document and its reference page.",
};
