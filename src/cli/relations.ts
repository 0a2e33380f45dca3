// The commands an operator reaches for beyond create/show/delete: `users update`, `users
// set-password`, a user's policies (`users add-policy|remove-policy`), group membership (`groups
// add-user|remove-user`), and `sessions list|revoke`. Each is one or two calls of the typed client.
import { defineCommand, type ArgsDef } from "citty";
import type { OperationId } from "../../clients/typescript/index.ts";
import { CliFailure, EXIT, output } from "./output.ts";
import { call, remoteArgs, withClient, type AnyCommand } from "./remote.ts";
import { resolveOptionalUser, resolveUser } from "./user-ref.ts";

const str = { type: "string" } as const;
const userArg = {
  user: { type: "positional", description: "User UUID, username or email", required: true },
} as const satisfies ArgsDef;

/** The user fields `users update` may change (PUT /users/{u} replaces them all: the others are kept). */
const USER_FIELDS = {
  username: "username",
  firstname: "firstname",
  lastname: "lastname",
  purpose: "purpose",
  "authentication-method": "authentication_method",
} as const;

const updateUser = defineCommand({
  meta: { name: "update", description: "Change a user's fields; the ones not given are kept" },
  args: {
    ...userArg,
    username: { ...str, description: "Login name", valueHint: "NAME" },
    firstname: { ...str, description: "First name" },
    lastname: { ...str, description: "Last name" },
    purpose: { ...str, description: "user, internal or external_api" },
    "authentication-method": {
      ...str,
      description: "native, ldap, saml or default (the tenant's)",
      valueHint: "METHOD",
    },
    enable: { type: "boolean", description: "Enable the user", default: false },
    disable: { type: "boolean", description: "Disable the user (its sessions end)", default: false },
    ...remoteArgs,
  },
  async run({ args }) {
    if (args.enable && args.disable)
      throw new CliFailure("tessera users update: --enable and --disable contradict each other", EXIT.usage);
    const changes: Record<string, unknown> = {};
    for (const [flag, field] of Object.entries(USER_FIELDS))
      if (args[flag as keyof typeof USER_FIELDS] !== undefined) changes[field] = args[flag as keyof typeof USER_FIELDS];
    if (args.enable || args.disable) changes.enabled = Boolean(args.enable);
    if (Object.keys(changes).length === 0)
      throw new CliFailure(
        `tessera users update: nothing to change: give --${[...Object.keys(USER_FIELDS), "enable", "disable"].join(", --")}`,
        EXIT.usage,
      );
    await withClient(args, async (client) => {
      const path = { user_uuid: await resolveUser(client, args.user) };
      const current = (await call(client, "getUser", { params: { path } })) as Record<string, unknown>;
      const kept = Object.fromEntries(
        ["username", "firstname", "lastname", "purpose", "authentication_method", "enabled"].map((k) => [
          k,
          current[k],
        ]),
      );
      await call(client, "updateUser", { params: { path }, body: { ...kept, ...changes } });
      output(args, await call(client, "getUser", { params: { path } }));
    });
  },
});

/** The new password: --password, else TESSERA_NEW_PASSWORD, else the first line of a piped stdin. */
export async function newPassword(flag: string | undefined, command = "tessera users set-password"): Promise<string> {
  const given =
    flag ??
    process.env.TESSERA_NEW_PASSWORD ??
    (process.stdin.isTTY ? undefined : (await Bun.stdin.text()).split(/\r?\n/)[0]);
  if (!given)
    throw new CliFailure(
      `${command}: no password: give --password, TESSERA_NEW_PASSWORD, or pipe it on standard input`,
      EXIT.usage,
    );
  return given;
}

const setPassword = defineCommand({
  meta: {
    name: "set-password",
    description:
      "Set a user's password (as an administrator: auth.users.password.reset.{uuid}.create; with --old-password: the user's own change). Its sessions end",
  },
  args: {
    ...userArg,
    password: {
      ...str,
      description: "The new password (better: TESSERA_NEW_PASSWORD, or standard input)",
      valueHint: "PASSWORD",
    },
    "old-password": { ...str, description: "The current password: change it as the user does", valueHint: "PASSWORD" },
    ...remoteArgs,
  },
  async run({ args }) {
    const password = await newPassword(args.password);
    await withClient(args, async (client) => {
      const userUuid = await resolveUser(client, args.user);
      if (args["old-password"])
        await call(client, "updateUserPassword", {
          params: { path: { user_uuid: userUuid } },
          body: { old_password: args["old-password"], new_password: password },
        });
      else await call(client, "resetPassword", { params: { query: { user_uuid: userUuid } }, body: { password } });
      output(
        args,
        args.json
          ? { user_uuid: args.user, password_set: true }
          : `password set for user ${args.user}; its sessions ended`,
      );
    });
  },
});

/** `add-X` / `remove-X` of a link between two records (PUT / DELETE of a sub-resource). */
interface Link {
  what: string;
  owner: readonly [param: string, help: string];
  target: readonly [param: string, help: string];
  ops: readonly [add: OperationId, remove: OperationId];
}

function linkCommand(action: "add" | "remove", spec: Link): AnyCommand {
  const [ownerParam, ownerHelp] = spec.owner;
  const [targetParam, targetHelp] = spec.target;
  return defineCommand({
    meta: {
      name: `${action}-${spec.what}`,
      description:
        action === "add"
          ? `Add a ${spec.what} (succeeds when already there)`
          : `Remove a ${spec.what} (succeeds when already absent)`,
    },
    args: {
      owner: { type: "positional", description: ownerHelp, required: true },
      target: { type: "positional", description: targetHelp, required: true },
      ...remoteArgs,
    },
    async run({ args }) {
      await withClient(args, async (client) => {
        // A user may be named by username or email (user-ref.ts), whichever side of the link it is.
        const named = async (param: string, ref: string) => (param === "user_uuid" ? resolveUser(client, ref) : ref);
        await call(client, action === "add" ? spec.ops[0] : spec.ops[1], {
          params: {
            path: {
              [ownerParam]: await named(ownerParam, args.owner),
              [targetParam]: await named(targetParam, args.target),
            },
          },
        });
        const done = { [ownerParam]: args.owner, [targetParam]: args.target, action };
        output(args, args.json ? done : `${action === "add" ? "added" : "removed"} ${spec.what} ${args.target}`);
      });
    },
  });
}

const userPolicy: Link = {
  what: "policy",
  owner: ["user_uuid", "User UUID, username or email"],
  target: ["policy", "Policy UUID or slug"],
  ops: ["addUserPolicy", "removeUserPolicy"],
};
const groupUser: Link = {
  what: "user",
  owner: ["group_uuid", "Group UUID"],
  target: ["user_uuid", "User UUID, username or email"],
  ops: ["addGroupUser", "removeGroupUser"],
};

const listSessions = defineCommand({
  meta: { name: "list", description: "List sessions (of the scoping tenant, or of one user with --user)" },
  args: {
    user: { ...str, description: "Only this user's sessions", valueHint: "UUID|NAME|EMAIL" },
    recurse: { type: "boolean", description: "Include sub-tenants", default: false },
    limit: { ...str, description: "At most this many", valueHint: "N" },
    offset: { ...str, description: "Skip this many", valueHint: "N" },
    ...remoteArgs,
  },
  async run({ args }) {
    await withClient(args, async (client) => {
      const query = { recurse: args.recurse || undefined, limit: args.limit, offset: args.offset };
      const userUuid = await resolveOptionalUser(client, args.user);
      const page = (
        userUuid
          ? await call(client, "listUserSessions", { params: { path: { user_uuid: userUuid }, query } })
          : await call(client, "listSessions", { params: { query } })
      ) as { items: unknown[]; total: number };
      if (args.json) return output(args, page);
      output(args, page.items, ["uuid", "user_uuid", "tenant_uuid", "mobile"]);
      console.log(`${page.items.length} shown, ${page.total} in total`);
    });
  },
});

const revokeSession = defineCommand({
  meta: { name: "revoke", description: "End a session and its tokens (succeeds when already ended)" },
  args: {
    session: { type: "positional", description: "Session UUID", required: true },
    user: { ...str, description: "The session's user (needs only that user's ACL)", valueHint: "UUID|NAME|EMAIL" },
    ...remoteArgs,
  },
  async run({ args }) {
    await withClient(args, async (client) => {
      if (args.user)
        await call(client, "deleteUserSession", {
          params: { path: { user_uuid: await resolveUser(client, args.user), session_uuid: args.session } },
        });
      else await call(client, "deleteSession", { params: { path: { session_uuid: args.session } } });
      output(args, args.json ? { revoked: args.session } : `revoked session ${args.session}`);
    });
  },
});

export const sessionsCommand = defineCommand({
  meta: { name: "sessions", description: "List and revoke sessions" },
  subCommands: { list: listSessions, revoke: revokeSession },
});

/** Sub-commands added to the resource groups of resources.ts. */
export const relationCommands: Record<string, Record<string, AnyCommand>> = {
  users: {
    update: updateUser,
    "set-password": setPassword,
    "add-policy": linkCommand("add", userPolicy),
    "remove-policy": linkCommand("remove", userPolicy),
  },
  groups: { "add-user": linkCommand("add", groupUser), "remove-user": linkCommand("remove", groupUser) },
};
