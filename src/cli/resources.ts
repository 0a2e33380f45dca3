// `tessera users|tenants|groups|policies|oidc-clients|webhooks|backends oidc list|show|create|delete`, `policies add-acl|remove-acl`,
// `webhooks rotate-secret|ping`,
// `users unlock` and `users mfa show|reset` (mfa.ts): one table describes each resource; the commands are built from it over the typed client. The
// commands between resources (memberships, passwords, updates) are in relations.ts.
import { defineCommand, type ArgsDef } from "citty";
import type { OperationId } from "../../clients/typescript/index.ts";
import { usersCollisionsCommand } from "./local.ts";
import { relationCommands } from "./relations.ts";
import { CliFailure, EXIT, output, printJson, printTable, progress } from "./output.ts";
import { call, remoteArgs, withClient, type AnyCommand } from "./remote.ts";
import { tenantAddAdminCommand } from "./roles.ts";
import { usersMfaCommand } from "./mfa.ts";
import { resolveUser } from "./user-ref.ts";

interface ResourceSpec {
  singular: string;
  ops: { list: OperationId; show: OperationId; create: OperationId; delete: OperationId };
  /** The path parameter naming one record. */
  param: string;
  columns: string[];
  createArgs: ArgsDef;
  /** Creation needs at least one of these body fields (an empty record is never what was meant). */
  needsOneOf: { field: string; flag: string }[];
  /** The creation body from the flags. */
  body(args: Record<string, unknown>): Record<string, unknown>;
}

const list = (v: unknown) =>
  typeof v === "string" && v !== ""
    ? v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
const str = { type: "string" } as const;

const RESOURCES: Record<string, ResourceSpec> = {
  webhooks: {
    singular: "webhook",
    ops: { list: "listWebhooks", show: "getWebhook", create: "createWebhook", delete: "deleteWebhook" },
    param: "webhook_uuid",
    columns: ["uuid", "url", "events", "enabled", "tenant_uuid", "description"],
    createArgs: {
      // (`--url` names the Tessera service itself: remote.ts)
      endpoint: { ...str, description: "https URL the events are POSTed to", valueHint: "URL" },
      events: { ...str, description: "Event names or prefixes ending in *, comma-separated", valueHint: "A,B" },
      description: { ...str, description: "Description" },
    },
    body: (a) => ({ url: a.endpoint, events: list(a.events), description: a.description }),
    needsOneOf: [{ field: "url", flag: "--endpoint" }],
  },
  users: {
    singular: "user",
    ops: { list: "listUsers", show: "getUser", create: "createUser", delete: "deleteUser" },
    param: "user_uuid",
    columns: ["uuid", "username", "firstname", "lastname", "purpose", "enabled", "tenant_uuid"],
    createArgs: {
      username: { ...str, description: "Login name", valueHint: "NAME" },
      password: { ...str, description: "Password (none: the user cannot log in with one)", valueHint: "PASSWORD" },
      email: { ...str, description: "Email address (confirmed)", valueHint: "ADDRESS" },
      firstname: { ...str, description: "First name" },
      lastname: { ...str, description: "Last name" },
      purpose: { ...str, description: "user, internal or external_api" },
    },
    body: (a) => ({
      username: a.username,
      password: a.password,
      email_address: a.email,
      firstname: a.firstname,
      lastname: a.lastname,
      purpose: a.purpose,
    }),
    needsOneOf: [
      { field: "username", flag: "--username" },
      { field: "email_address", flag: "--email" },
    ],
  },
  tenants: {
    singular: "tenant",
    ops: { list: "listTenants", show: "getTenant", create: "createTenant", delete: "deleteTenant" },
    param: "tenant_uuid",
    columns: ["uuid", "name", "slug", "parent_uuid", "domain_names"],
    createArgs: {
      name: { ...str, description: "Name", valueHint: "NAME" },
      slug: { ...str, description: "Slug (1..10 of [A-Za-z0-9_]; generated when absent)" },
      domains: { ...str, description: "Domain names, comma-separated", valueHint: "A,B" },
    },
    body: (a) => ({ name: a.name, slug: a.slug, domain_names: list(a.domains) }),
    needsOneOf: [
      { field: "name", flag: "--name" },
      { field: "slug", flag: "--slug" },
    ],
  },
  groups: {
    singular: "group",
    ops: { list: "listGroups", show: "getGroup", create: "createGroup", delete: "deleteGroup" },
    param: "group_uuid",
    columns: ["uuid", "name", "slug", "tenant_uuid", "system_managed"],
    createArgs: { name: { ...str, description: "Name", valueHint: "NAME" }, slug: { ...str, description: "Slug" } },
    body: (a) => ({ name: a.name, slug: a.slug }),
    needsOneOf: [{ field: "name", flag: "--name" }],
  },
  policies: {
    singular: "policy",
    ops: { list: "listPolicies", show: "getPolicy", create: "createPolicy", delete: "deletePolicy" },
    param: "policy",
    columns: ["uuid", "name", "slug", "tenant_uuid", "shared", "acl"],
    createArgs: {
      name: { ...str, description: "Name", valueHint: "NAME" },
      slug: { ...str, description: "Slug" },
      acl: { ...str, description: "ACL entries, comma-separated (`!entry` denies)", valueHint: "A,B" },
      description: { ...str, description: "Description" },
      shared: { type: "boolean", description: "Visible (read-only) from sub-tenants", default: false },
    },
    body: (a) => ({
      name: a.name,
      slug: a.slug,
      acl: list(a.acl),
      description: a.description,
      shared: a.shared || undefined,
    }),
    needsOneOf: [{ field: "name", flag: "--name" }],
  },
  "oidc-clients": {
    singular: "OpenID Connect client",
    ops: { list: "listOidcClients", show: "getOidcClient", create: "createOidcClient", delete: "deleteOidcClient" },
    param: "oidc_client_id",
    columns: ["client_id", "name", "client_type", "tenant_uuid", "redirect_uris"],
    createArgs: {
      name: { ...str, description: "Name shown on the login page", valueHint: "NAME" },
      type: {
        ...str,
        description: "confidential (has a secret, shown once) or public (PKCE only)",
        default: "confidential",
      },
      "redirect-uris": { ...str, description: "Redirect URIs, comma-separated (matched exactly)", valueHint: "A,B" },
      "post-logout-redirect-uris": {
        ...str,
        description: "Post-logout redirect URIs, comma-separated",
        valueHint: "A,B",
      },
      "grant-types": {
        ...str,
        description: "Grant types, comma-separated (default authorization_code,refresh_token)",
        valueHint: "A,B",
      },
      "first-party": { type: "boolean", description: "A first-party client (no consent screen)", default: false },
      "allow-insecure-redirects": {
        type: "boolean",
        description: "Allow plain http redirect URIs off 127.0.0.1/[::1] (development only)",
        default: false,
      },
      scopes: {
        ...str,
        description: "Scopes the client may ask for, comma-separated (`acl:<pattern>` narrows tokens)",
        valueHint: "A,B",
      },
      acl: {
        ...str,
        description: "ACL of the client's own tokens (client_credentials), comma-separated",
        valueHint: "A,B",
      },
      "backchannel-logout-uri": {
        ...str,
        description: "Where logout tokens are POSTed when the user's session ends (Back-Channel Logout)",
        valueHint: "URL",
      },
      "frontchannel-logout-uri": {
        ...str,
        description: "The client's logout page, framed on the signed-out page (Front-Channel Logout)",
        valueHint: "URL",
      },
      "logout-session-required": {
        type: "boolean",
        description: "Logout tokens carry sid, front-channel URIs get iss and sid",
        default: false,
      },
    },
    body: (a) => ({
      name: a.name,
      client_type: a.type,
      redirect_uris: list(a["redirect-uris"]),
      post_logout_redirect_uris: list(a["post-logout-redirect-uris"]),
      grant_types: list(a["grant-types"]),
      first_party: a["first-party"] || undefined,
      allow_insecure_redirects: a["allow-insecure-redirects"] || undefined,
      scopes: list(a.scopes),
      acl: list(a.acl),
      backchannel_logout_uri: a["backchannel-logout-uri"],
      backchannel_logout_session_required: a["logout-session-required"] || undefined,
      frontchannel_logout_uri: a["frontchannel-logout-uri"],
      frontchannel_logout_session_required: a["logout-session-required"] || undefined,
    }),
    needsOneOf: [{ field: "name", flag: "--name" }],
  },
  // `tessera backends oidc …` (docs/federation.md): a tenant's upstream OpenID providers.
  "oidc-backends": {
    singular: "upstream OpenID provider",
    ops: { list: "listBackendsOidc", show: "getBackendOidc", create: "createBackendOidc", delete: "deleteBackendOidc" },
    param: "oidc_backend_uuid",
    columns: ["uuid", "name", "display_name", "issuer", "provisioning", "redirect_uri"],
    createArgs: {
      name: { ...str, description: "Short name, unique in the tenant", valueHint: "NAME" },
      "display-name": { ...str, description: "Shown on the login page: Continue with <display name>" },
      preset: { ...str, description: "oidc (default), google, entra or github" },
      issuer: { ...str, description: "The provider's issuer (its discovery is fetched at once)", valueHint: "URL" },
      "client-id": { ...str, description: "Tessera's client id at the provider" },
      "client-secret": { ...str, description: "Tessera's client secret at the provider (never shown again)" },
      scopes: { ...str, description: "Scopes, comma-separated (default openid,email,profile)", valueHint: "A,B" },
      provisioning: { ...str, description: "create, link (default) or off" },
      "upstream-logout": { ...str, description: "true: logging out here logs out at the provider too" },
      "trust-amr": { ...str, description: "true: the provider's multi-factor amr meets the tenant's MFA requirement" },
    },
    body: (a) => ({
      name: a.name,
      display_name: a["display-name"] ?? a.name,
      preset: a.preset,
      issuer: a.issuer,
      client_id: a["client-id"],
      client_secret: a["client-secret"],
      scopes: list(a.scopes),
      provisioning: a.provisioning,
      upstream_logout: a["upstream-logout"] === undefined ? undefined : a["upstream-logout"] === "true",
      trust_amr: a["trust-amr"] === undefined ? undefined : a["trust-amr"] === "true",
    }),
    needsOneOf: [{ field: "name", flag: "--name" }],
  },
};

function listCommand(name: string, spec: ResourceSpec): AnyCommand {
  return defineCommand({
    meta: { name: "list", description: `List ${name} (of the scoping tenant; --recurse for sub-tenants)` },
    args: {
      ...remoteArgs,
      search: { ...str, description: "Only records with a field containing this" },
      limit: { ...str, description: "At most this many (one page)", valueHint: "N" },
      offset: { ...str, description: "Skip this many", valueHint: "N" },
      recurse: { type: "boolean", description: "Include sub-tenants", default: false },
      all: {
        type: "boolean",
        description: "Every record, fetched page by page (progress on a terminal)",
        default: false,
      },
    },
    async run({ args }) {
      const query = { search: args.search, recurse: args.recurse || undefined, limit: args.limit, offset: args.offset };
      await withClient(args, async (client) => {
        if (!args.all) {
          const page = (await call(client, spec.ops.list, { params: { query } })) as {
            items: Record<string, unknown>[];
            filtered?: number;
            total: number;
          };
          if (args.json) printJson(page);
          else {
            printTable(page.items, spec.columns);
            console.log(`${page.items.length} shown, ${page.filtered ?? page.total} matching, ${page.total} in total`);
          }
          return;
        }
        const items: unknown[] = [];
        const first = (await call(client, spec.ops.list, { params: { query: { ...query, limit: 1 } } })) as {
          filtered?: number;
          total: number;
        };
        const bar = progress(`fetching ${name}`, first.filtered ?? first.total);
        for await (const item of client.paginate(
          spec.ops.list as never,
          { params: { query: { search: args.search, recurse: args.recurse || undefined } } } as never,
          500,
        )) {
          items.push(item);
          bar.tick();
        }
        bar.stop();
        output(args, items, spec.columns);
      });
    },
  });
}

function oneCommand(action: "show" | "delete", name: string, spec: ResourceSpec): AnyCommand {
  return defineCommand({
    meta: {
      name: action,
      description:
        action === "show" ? `Show one ${spec.singular}` : `Delete a ${spec.singular} (succeeds when already absent)`,
    },
    args: {
      id: {
        type: "positional",
        description:
          spec.param === "policy"
            ? "UUID or slug"
            : spec.param === "oidc_client_id"
              ? "client_id"
              : spec.param === "user_uuid"
                ? "UUID, username or email"
                : "UUID",
        required: true,
      },
      ...remoteArgs,
    },
    async run({ args }) {
      await withClient(args, async (client) => {
        const id = spec.param === "user_uuid" ? await resolveUser(client, args.id) : args.id;
        const result = await call(client, spec.ops[action], { params: { path: { [spec.param]: id } } });
        if (action === "show") output(args, result);
        else output(args, args.json ? { deleted: args.id } : `deleted ${spec.singular} ${args.id}`);
      });
    },
  });
}

function createCommand(name: string, spec: ResourceSpec): AnyCommand {
  return defineCommand({
    meta: { name: "create", description: `Create a ${spec.singular} in the scoping tenant` },
    args: {
      ...spec.createArgs,
      data: { ...str, description: "Extra fields as a JSON object (merged under the flags)", valueHint: "JSON" },
      ...remoteArgs,
    },
    async run({ args }) {
      let extra: Record<string, unknown> = {};
      if (args.data) {
        try {
          extra = JSON.parse(args.data as string);
        } catch {
          throw new CliFailure("--data must be a JSON object", EXIT.usage);
        }
      }
      const fromFlags = Object.fromEntries(Object.entries(spec.body(args)).filter(([, v]) => v !== undefined));
      const body = { ...extra, ...fromFlags };
      if (!spec.needsOneOf.some(({ field }) => body[field] != null)) {
        const flags = spec.needsOneOf.map((n) => n.flag).join(" or ");
        throw new CliFailure(
          `tessera ${name} create: nothing says which ${spec.singular} to create: give ${flags} (see --help)`,
          EXIT.usage,
        );
      }
      await withClient(args, async (client) => output(args, await call(client, spec.ops.create, { body })));
    },
  });
}

function aclCommand(action: "add" | "remove"): AnyCommand {
  return defineCommand({
    meta: {
      name: `${action}-acl`,
      description: `${action === "add" ? "Add an ACL entry to" : "Remove an ACL entry from"} a policy`,
    },
    args: {
      policy: { type: "positional", description: "Policy UUID or slug", required: true },
      access: { type: "positional", description: "The ACL entry (e.g. confd.users.read)", required: true },
      ...remoteArgs,
    },
    async run({ args }) {
      await withClient(args, async (client) => {
        await call(client, action === "add" ? "addPolicyAcl" : "removePolicyAcl", {
          params: { path: { policy: args.policy, access: args.access } },
        });
        output(
          args,
          args.json
            ? { policy: args.policy, access: args.access, action }
            : `${action === "add" ? "added" : "removed"} ${args.access}`,
        );
      });
    },
  });
}

/** `tessera webhooks rotate-secret UUID` (the new secret, shown once) and `tessera webhooks ping UUID`. */
function webhookCommand(action: "rotate-secret" | "ping"): AnyCommand {
  return defineCommand({
    meta: {
      name: action,
      description:
        action === "ping"
          ? "Send a test event (webhook_ping) to a webhook"
          : "Rotate a webhook's signing secret (the new one is shown once; the old one signs for the grace period)",
    },
    args: { id: { type: "positional", description: "Webhook UUID", required: true }, ...remoteArgs },
    async run({ args }) {
      await withClient(args, async (client) => {
        const op = action === "ping" ? "createWebhookPing" : "createWebhookSecret";
        output(args, await call(client, op, { params: { path: { webhook_uuid: args.id } } }));
      });
    },
  });
}

/** `tessera users unlock UUID`: forgets the user's failed logins (docs/security.md "Login throttling"). */
const unlockCommand: AnyCommand = defineCommand({
  meta: {
    name: "unlock",
    description: "Forget a user's failed logins, lifting the locks on its login names (address locks stay)",
  },
  args: { id: { type: "positional", description: "User UUID, username or email", required: true }, ...remoteArgs },
  async run({ args }) {
    await withClient(args, async (client) => {
      const userUuid = await resolveUser(client, args.id);
      await call(client, "unlockUserLogins", { params: { path: { user_uuid: userUuid } } });
      output(args, args.json ? { unlocked: args.id } : `unlocked user ${args.id}`);
    });
  },
});

const built: Record<string, AnyCommand> = Object.fromEntries(
  Object.entries(RESOURCES).map(([name, spec]) => {
    const subCommands: Record<string, AnyCommand> = {
      list: listCommand(name, spec),
      show: oneCommand("show", name, spec),
      create: createCommand(name, spec),
      delete: oneCommand("delete", name, spec),
    };
    if (name === "users") subCommands.mfa = usersMfaCommand;
    if (name === "tenants") subCommands["add-admin"] = tenantAddAdminCommand;
    if (name === "policies")
      Object.assign(subCommands, { "add-acl": aclCommand("add"), "remove-acl": aclCommand("remove") });
    if (name === "users") Object.assign(subCommands, { unlock: unlockCommand, collisions: usersCollisionsCommand });
    if (name === "webhooks")
      Object.assign(subCommands, { "rotate-secret": webhookCommand("rotate-secret"), ping: webhookCommand("ping") });
    Object.assign(subCommands, relationCommands[name] ?? {});
    return [name, defineCommand({ meta: { name, description: `Administer ${name}` }, subCommands })];
  }),
);

const { "oidc-backends": oidcBackends, ...others } = built;
export const resourceCommands: Record<string, AnyCommand> = {
  ...others,
  backends: defineCommand({
    meta: { name: "backends", description: "Administer a tenant's identity backends" },
    subCommands: { oidc: oidcBackends! },
  }),
};
