// `tessera login` / `tessera logout`: one login kept for the commands that follow, like `kcadm config
// credentials`. The token and its refresh token are stored per Tessera URL in a file under the
// user's config directory, readable by the user alone (0600); a later command without --token or
// credentials uses the token, refreshes it once expired, and never logs in itself: one login (one
// audit entry) for a day of commands, instead of a login and a revocation per command.
import { defineCommand } from "citty";
import { createTesseraClient } from "../../clients/typescript/index.ts";
import { CliFailure, EXIT, output } from "./output.ts";
import { asFailure, remoteArgs } from "./remote.ts";
import { CLI_CLIENT_ID, readSessions, sessionKey, sessionsFile, storedToken, storeSession } from "./session-store.ts";

const loginCommand = defineCommand({
  meta: {
    name: "login",
    description:
      "Log in once and keep the session (token and refresh token, file mode 0600) for the next commands at --url",
  },
  args: {
    url: remoteArgs.url,
    json: remoteArgs.json,
    "auth-user": remoteArgs["auth-user"],
    "auth-password": remoteArgs["auth-password"],
    expiration: {
      type: "string",
      description: "The token's lifetime in seconds (refreshed after; default 3600)",
      valueHint: "SECONDS",
    },
  },
  async run({ args }) {
    const username = args["auth-user"] ?? process.env.TESSERA_AUTH_USER;
    const password = args["auth-password"] ?? process.env.TESSERA_AUTH_PASSWORD;
    if (!username || !password)
      throw new CliFailure(
        "tessera login needs --auth-user and --auth-password (or TESSERA_AUTH_USER and TESSERA_AUTH_PASSWORD)",
        EXIT.usage,
      );
    const expiration = Number(args.expiration ?? 3600);
    if (!Number.isInteger(expiration) || expiration <= 0)
      throw new CliFailure("--expiration must be a positive whole number of seconds", EXIT.usage);
    const client = createTesseraClient({ baseUrl: args.url });
    try {
      const t = await client.login({ username, password, expiration, accessType: "offline", clientId: CLI_CLIENT_ID });
      storeSession(args.url, {
        token: t.token,
        expires_at: t.utc_expires_at ?? t.expires_at,
        refresh_token: t.refresh_token ?? null,
        user_uuid: t.auth_id,
      });
      const shown = {
        url: sessionKey(args.url),
        user_uuid: t.auth_id,
        expires_at: t.utc_expires_at,
        file: sessionsFile(),
      };
      output(
        args,
        args.json ? shown : `logged in as ${username} at ${sessionKey(args.url)} (session in ${sessionsFile()})`,
      );
    } catch (e) {
      throw asFailure(e, args.url);
    }
  },
});

const logoutCommand = defineCommand({
  meta: { name: "logout", description: "Revoke the stored session for --url (token and refresh token) and forget it" },
  args: { url: remoteArgs.url, json: remoteArgs.json },
  async run({ args }) {
    const session = readSessions()[sessionKey(args.url)];
    if (session) {
      const client = createTesseraClient({ baseUrl: args.url });
      try {
        // The refresh token first, with a token that is still valid; the access token last.
        const token = await storedToken(client, args.url).catch(() => null);
        if (token) {
          client.token = token;
          await client.call("deleteMyToken", { params: { path: { client_id: CLI_CLIENT_ID } } });
          await client.revokeToken(token);
        }
      } catch (e) {
        throw asFailure(e, args.url); // kept: the operator may try again once the service answers
      }
      storeSession(args.url, null);
    }
    output(
      args,
      args.json ? { url: sessionKey(args.url), logged_out: Boolean(session) } : `logged out of ${sessionKey(args.url)}`,
    );
  },
});

export const sessionCommands = { login: loginCommand, logout: logoutCommand };
