// `tessera token create|check|revoke`: log in, check a token as a service would, revoke.
import { defineCommand } from "citty";
import { createTesseraClient } from "../../clients/typescript/index.ts";
import { CliFailure, EXIT, printJson, printRecord } from "./output.ts";
import { asFailure, remoteArgs, withClient } from "./remote.ts";

const create = defineCommand({
  meta: {
    name: "create",
    description:
      "Log in and print a new token (the user's credentials: flags or TESSERA_AUTH_USER/TESSERA_AUTH_PASSWORD)",
  },
  args: {
    url: remoteArgs.url,
    json: remoteArgs.json,
    username: { type: "string", description: "Login (env TESSERA_AUTH_USER)", valueHint: "NAME" },
    password: {
      type: "string",
      description: "Password (env TESSERA_AUTH_PASSWORD; prefer the environment)",
      valueHint: "PASSWORD",
    },
    expiration: { type: "string", description: "Lifetime in seconds", valueHint: "SECONDS" },
    "client-id": { type: "string", description: "With --offline: the refresh token's client id", valueHint: "ID" },
    offline: { type: "boolean", description: "Also issue a refresh token (needs --client-id)", default: false },
  },
  async run({ args }) {
    const username = args.username ?? process.env.TESSERA_AUTH_USER;
    const password = args.password ?? process.env.TESSERA_AUTH_PASSWORD;
    if (!username || !password)
      throw new CliFailure(
        "token create needs --username and --password (or TESSERA_AUTH_USER and TESSERA_AUTH_PASSWORD)",
        EXIT.usage,
      );
    const expiration = args.expiration === undefined ? undefined : Number(args.expiration);
    if (expiration !== undefined && !Number.isInteger(expiration))
      throw new CliFailure("--expiration must be a whole number of seconds", EXIT.usage);
    const client = createTesseraClient({ baseUrl: args.url });
    try {
      const token = await client.login({
        username,
        password,
        expiration,
        accessType: args.offline ? "offline" : undefined,
        clientId: args["client-id"],
      });
      if (args.json) printJson(token);
      else console.log(token.token);
    } catch (e) {
      throw asFailure(e, args.url);
    }
  },
});

const check = defineCommand({
  meta: {
    name: "check",
    description: "Check a token: exit 0 when valid (with --scope and --tenant when given), 1 when not",
  },
  args: {
    token: { type: "positional", description: "The token to check", required: true },
    scope: {
      type: "string",
      description: "An access the token must hold (e.g. confd.users.read)",
      valueHint: "ACCESS",
    },
    tenant: {
      type: "string",
      description: "A tenant the token's user must belong to (or be above)",
      valueHint: "UUID",
    },
    url: remoteArgs.url,
    json: remoteArgs.json,
  },
  async run({ args }) {
    const client = createTesseraClient({ baseUrl: args.url });
    let valid: boolean;
    try {
      valid = await client.isTokenValid(args.token, { scope: args.scope, tenant: args.tenant });
    } catch (e) {
      throw asFailure(e, args.url);
    }
    if (args.json) printJson({ valid });
    else console.log(valid ? "valid" : "invalid");
    if (!valid) throw new CliFailure("", EXIT.refused);
  },
});

const show = defineCommand({
  meta: { name: "show", description: "Show a token's record (ACL, metadata, expiry)" },
  args: {
    token: { type: "positional", description: "The token", required: true },
    url: remoteArgs.url,
    json: remoteArgs.json,
  },
  async run({ args }) {
    const client = createTesseraClient({ baseUrl: args.url });
    try {
      const { data } = await client.ops.getToken({ params: { path: { token: args.token } } });
      if (args.json) printJson(data);
      else printRecord(data);
    } catch (e) {
      throw asFailure(e, args.url);
    }
  },
});

const revoke = defineCommand({
  meta: { name: "revoke", description: "Revoke a token (always succeeds)" },
  args: {
    token: { type: "positional", description: "The token to revoke", required: true },
    url: remoteArgs.url,
    json: remoteArgs.json,
  },
  async run({ args }) {
    await withClient({ ...args }, (client) => client.revokeToken(args.token), { needsToken: false });
    if (args.json) printJson({ revoked: true });
    else console.log("revoked");
  },
});

export const tokenCommand = defineCommand({
  meta: { name: "token", description: "Create, check, show and revoke tokens" },
  subCommands: { create, check, show, revoke },
});
