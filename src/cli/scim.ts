// `tessera scim-tokens list|create|revoke`: the SCIM tokens of a tenant (docs/scim.md), the bearer
// tokens its directory (Entra ID, Okta) provisions with. `create` prints the token once.
import { defineCommand } from "citty";
import { output } from "./output.ts";
import { call, remoteArgs, withClient, type AnyCommand } from "./remote.ts";

const COLUMNS = ["uuid", "name", "tenant_uuid", "acl", "created_at", "last_used_at"];

const listCommand: AnyCommand = defineCommand({
  meta: { name: "list", description: "The SCIM tokens of the scoping tenant (never their secrets)" },
  args: { ...remoteArgs },
  async run({ args }) {
    await withClient(args, async (client) => {
      const page = (await call(client, "listScimTokens")) as { items: Record<string, unknown>[] };
      output(args, page.items, COLUMNS);
    });
  },
});

const createCommand: AnyCommand = defineCommand({
  meta: {
    name: "create",
    description: "Create a SCIM token for the scoping tenant's directory; the token is printed once",
  },
  args: {
    name: { type: "positional", description: 'What it is for (e.g. "Entra ID")', required: true },
    acl: {
      type: "string",
      description: "Its ACL, comma-separated (default auth.scim.#; you must hold each entry)",
      valueHint: "A,B",
    },
    ...remoteArgs,
  },
  async run({ args }) {
    const acl =
      typeof args.acl === "string" && args.acl !== "" ? args.acl.split(",").map((s: string) => s.trim()) : undefined;
    await withClient(args, async (client) => {
      const created = (await call(client, "createScimToken", {
        body: { name: args.name, ...(acl ? { acl } : {}) },
      })) as {
        token: string;
      };
      output(args, created);
    });
  },
});

const revokeCommand: AnyCommand = defineCommand({
  meta: { name: "revoke", description: "Revoke a SCIM token: the directory's next request is refused" },
  args: {
    uuid: { type: "positional", description: "The token's uuid (not the token)", required: true },
    ...remoteArgs,
  },
  async run({ args }) {
    await withClient(args, async (client) => {
      await call(client, "deleteScimToken", { params: { path: { scim_token_uuid: args.uuid } } });
      output(args, args.json ? { revoked: args.uuid } : `revoked SCIM token ${args.uuid}`);
    });
  },
});

export const scimTokensCommand: AnyCommand = defineCommand({
  meta: { name: "scim-tokens", description: "The SCIM tokens of a tenant's directory (docs/scim.md)" },
  subCommands: { list: listCommand, create: createCommand, revoke: revokeCommand },
});
