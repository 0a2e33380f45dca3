// Upstream OpenID Connect providers of the scoping tenant (docs/federation.md): the providers its users
// sign in with on the hosted login page. CRUD like every tenant resource; the client secret is written,
// never read back.
import { z } from "zod";
import { listQuery } from "../domain/collection.ts";
import { CAPS, text } from "../domain/strings.ts";
import { uuidParam } from "../domain/validate.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { RouteGroup } from "../http/route.ts";
import { deleteUserLink, listUserLinks } from "../services/integrations/upstream-oidc/links.ts";
import {
  createProvider,
  deleteProvider,
  listProviders,
  PRESETS,
  PROVISIONING,
  providerJson,
  requireVisibleProvider,
  updateProvider,
  type ProviderFilter,
} from "../services/integrations/upstream-oidc/providers.ts";

const providerList = listQuery<ProviderFilter>({
  order: ["name", "display_name", "created_at"],
  defaultOrder: "name",
  filters: ["name", "issuer", "provisioning"],
});
const providerParam = z.object({ oidc_backend_uuid: uuidParam });

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const scopeToken = z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/);
const claimName = text(CAPS.shortName, { min: 1 });

const fields = {
  name: text(CAPS.shortName, { min: 1 }).describe("A short name, unique in the tenant"),
  display_name: text(CAPS.shortName, { min: 1 }).describe('Shown on the login page: "Continue with <display_name>"'),
  preset: z
    .enum(PRESETS as [string, ...string[]])
    .optional()
    .describe(
      "`oidc` (default, any OpenID provider), `google` (issuer https://accounts.google.com), `entra` (Microsoft Entra ID, multi-tenant issuer by default; the ID token's `tid` fills its issuer), `github` (plain OAuth 2.0, no ID token: the user and its verified emails from GitHub's API; `issuer` is then the base URL, https://github.com or an Enterprise Server's)",
    ),
  issuer: text(2_048, { min: 1 })
    .optional()
    .describe(
      "The provider's issuer: its discovery document is fetched from it (optional with a preset; with `github`, the base URL of a GitHub Enterprise Server)",
    ),
  client_id: text(CAPS.clientId, { min: 1 }),
  scopes: z
    .array(scopeToken)
    .max(64)
    .optional()
    .describe(
      "Default `openid email profile`; `openid` is always asked (`github`: default `read:user user:email`, no `openid`)",
    ),
  native_client_ids: z
    .array(text(CAPS.clientId, { min: 1 }))
    .max(32)
    .optional()
    .describe(
      "Client ids of the tenant's native applications at the provider: their ID tokens may log in with `POST /token` `idp_token` (besides `client_id`'s)",
    ),
  provisioning: z
    .enum(PROVISIONING as [string, ...string[]])
    .optional()
    .describe(
      "`create`: a user is made on first sign-in; `link` (default): only users already linked; `off`: sign-in disabled",
    ),
  claim_mapping: z
    .object({
      username: claimName.optional(),
      email: claimName.optional(),
      firstname: claimName.optional(),
      lastname: claimName.optional(),
      locale: claimName.optional(),
    })
    .optional()
    .describe(
      "Which upstream claim fills which user field. Defaults: preferred_username (else the verified email) → username, email (when email_verified) → email, given_name → firstname, family_name → lastname, locale → locale (a provisioned user's language; ignored when not a language tag)",
    ),
  upstream_logout: z
    .boolean()
    .optional()
    .describe(
      "Logging out at Tessera logs out at the provider too, when its discovery has an end_session_endpoint (default false; register `post_logout_redirect_uri` there)",
    ),
  trust_amr: z
    .boolean()
    .optional()
    .describe(
      "Trust the provider's `amr` claim (RFC 8176): an ID token that shows a multi-factor authentication (`mfa`, or two factor classes such as `pwd otp`) meets the tenant's MFA requirement, without Tessera's own second factor or enrolment (default false; refused with `github`, which issues no ID token)",
    ),
};
const secret = text(4_096, { min: 1 });
const createBody = z.object({ ...fields, client_secret: secret });
const updateBody = z.object({ ...fields, client_secret: secret.optional().describe("Absent: kept") });

const providerView = z.object({
  uuid: z.string(),
  tenant_uuid: z.string(),
  name: z.string(),
  display_name: z.string(),
  preset: z.string(),
  issuer: z.string(),
  client_id: z.string(),
  scopes: z.array(z.string()),
  native_client_ids: z.array(z.string()),
  provisioning: z.string(),
  claim_mapping: z.object({
    username: z.string(),
    email: z.string(),
    firstname: z.string(),
    lastname: z.string(),
    locale: z.string(),
  }),
  redirect_uri: z.string().describe("The redirect URI to register at the upstream provider"),
  upstream_logout: z.boolean(),
  post_logout_redirect_uri: z
    .string()
    .describe("The post-logout redirect URI to register at the upstream provider (with `upstream_logout`)"),
  backchannel_logout_uri: z.string().describe("The back-channel logout URI to register at the upstream provider"),
  trust_amr: z.boolean().describe("The provider's multi-factor `amr` meets the tenant's MFA requirement"),
});
const providerPage = z.object({ items: z.array(providerView), filtered: z.number(), total: z.number() });

const linksView = z.object({
  items: z.array(
    z.object({
      oidc_backend_uuid: z.string(),
      name: z.string(),
      display_name: z.string(),
      subject: z.string().describe("The user's `sub` at the provider"),
      created_at: z.string(),
    }),
  ),
  total: z.number(),
});

type Body = z.infer<typeof updateBody>;
const asInput = (body: Body) => body as Parameters<typeof createProvider>[2];

export function backendsOidcRoutes(): RouteGroup {
  return new RouteGroup("backends_oidc")
    .get(
      "/backends/oidc",
      {
        operationId: "listBackendsOidc",
        summary: "Upstream OpenID Connect providers of the scoping tenant (and below with `recurse`)",
        acl: "auth.backends.oidc.read",
        query: providerList,
        responses: {
          200: { description: "`{items, filtered, total}`", schema: providerPage },
          400: "Invalid list parameter",
        },
      },
      async ({ c, app, caller, query }) => c.json(await listProviders(app, caller, query, requestIssuer(c, app))),
    )
    .post(
      "/backends/oidc",
      {
        operationId: "createBackendOidc",
        summary: "Add an upstream OpenID Connect provider to the scoping tenant",
        description:
          "The issuer's discovery document is fetched at once, through the outbound policy (`outbound_http`): an issuer that names a private, loopback or link-local address, or that cannot be reached, is a 400. The answer carries `redirect_uri`, to register at the provider; `client_secret` is never returned.",
        acl: "auth.backends.oidc.create",
        body: createBody,
        responses: {
          201: { description: "The provider", schema: providerView },
          400: "Invalid body, refused issuer, or discovery failed",
          409: "Name already used in the tenant",
        },
      },
      async ({ c, app, caller, body }) =>
        c.json(await createProvider(app, caller, asInput(body), requestIssuer(c, app)), 201),
    )
    .get(
      "/backends/oidc/{oidc_backend_uuid}",
      {
        operationId: "getBackendOidc",
        summary: "An upstream OpenID Connect provider (never its secret)",
        acl: "auth.backends.oidc.read",
        params: providerParam,
        responses: { 200: { description: "The provider", schema: providerView }, 404: "No such provider" },
      },
      async ({ c, app, caller, params }) =>
        c.json(
          providerJson(await requireVisibleProvider(app, caller, params.oidc_backend_uuid), requestIssuer(c, app)),
        ),
    )
    .put(
      "/backends/oidc/{oidc_backend_uuid}",
      {
        operationId: "updateBackendOidc",
        summary: "Replace an upstream OpenID Connect provider's settings (`client_secret` absent: kept)",
        acl: "auth.backends.oidc.update",
        params: providerParam,
        body: updateBody,
        responses: {
          204: "Updated",
          400: "Invalid body, refused issuer, or discovery failed",
          404: "No such provider",
          409: "Name already used in the tenant",
        },
      },
      async ({ c, app, caller, params, body }) => {
        await updateProvider(app, caller, params.oidc_backend_uuid, asInput(body));
        return c.body(null, 204);
      },
    )
    .delete(
      "/backends/oidc/{oidc_backend_uuid}",
      {
        operationId: "deleteBackendOidc",
        summary: "Remove an upstream OpenID Connect provider, its links and its sign-ins under way",
        acl: "auth.backends.oidc.delete",
        params: providerParam,
        responses: { 204: "Removed or absent" },
      },
      async ({ c, app, caller, params }) => {
        await deleteProvider(app, caller, params.oidc_backend_uuid);
        return c.body(null, 204);
      },
    )
    .get(
      "/users/me/oidc_links",
      {
        operationId: "listMyOidcLinks",
        summary: "The caller's links to upstream OpenID identities",
        acl: "auth.users.me.oidc_links.read",
        responses: { 200: { description: "`{items, total}`", schema: linksView }, 404: "The token has no user" },
      },
      async ({ c, app, caller }) => c.json(await listUserLinks(app, caller, "me")),
    )
    .delete(
      "/users/me/oidc_links/{oidc_backend_uuid}",
      {
        operationId: "deleteMyOidcLink",
        summary: "Remove the caller's link to an upstream provider",
        acl: "auth.users.me.oidc_links.delete",
        params: providerParam,
        responses: {
          204: "Removed, or absent",
          409: "Refused: it is the caller's only way to sign in (no other link, no usable password, no passkey)",
        },
      },
      async ({ c, app, caller, params }) => {
        await deleteUserLink(app, caller, "me", params.oidc_backend_uuid);
        return c.body(null, 204);
      },
    )
    .get(
      "/users/{user_uuid}/oidc_links",
      {
        operationId: "listUserOidcLinks",
        summary: "A user's links to upstream OpenID identities",
        acl: "auth.users.{user_uuid}.oidc_links.read",
        params: z.object({ user_uuid: uuidParam }),
        responses: { 200: { description: "`{items, total}`", schema: linksView }, 404: "No such user" },
      },
      async ({ c, app, caller, params }) => c.json(await listUserLinks(app, caller, params.user_uuid)),
    )
    .delete(
      "/users/{user_uuid}/oidc_links/{oidc_backend_uuid}",
      {
        operationId: "deleteUserOidcLink",
        summary: "Remove a user's link to an upstream provider",
        acl: "auth.users.{user_uuid}.oidc_links.delete",
        params: z.object({ user_uuid: uuidParam, oidc_backend_uuid: uuidParam }),
        responses: {
          204: "Removed, or absent (an administrator may remove another user's last way in)",
          409: "Refused: the caller's own only way to sign in",
        },
      },
      async ({ c, app, caller, params }) => {
        await deleteUserLink(app, caller, params.user_uuid, params.oidc_backend_uuid);
        return c.body(null, 204);
      },
    );
}
