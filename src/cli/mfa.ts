// `tessera users mfa show|reset USER_UUID`: a user's second factors, and the administrator reset
// (removes the TOTP factor, its recovery codes and the passkeys: the user logs in with the password
// alone and may enrol again). Over the typed client, like the other resource commands.
import { defineCommand, type CommandDef } from "citty";
import { printJson, printRecord } from "./output.ts";
import { remoteArgs, withClient } from "./remote.ts";
import { resolveUser } from "./user-ref.ts";

const userArg = { user: { type: "positional", description: "User UUID, username or email", required: true } } as const;

const show = defineCommand({
  meta: { name: "show", description: "Show which second factors a user has (never the secret)" },
  args: { ...userArg, ...remoteArgs },
  async run({ args }) {
    await withClient(args, async (client) => {
      const path = { user_uuid: await resolveUser(client, args.user) };
      const status = (await client.call("getUserMfa", { params: { path } })) as {
        totp: { enrolled: boolean; confirmed: boolean; confirmed_at: string | null };
        recovery_codes_left: number;
        passkeys: number;
        methods: string[];
      };
      if (args.json) printJson(status);
      else
        printRecord({
          totp: status.totp.confirmed ? "confirmed" : status.totp.enrolled ? "pending confirmation" : "none",
          confirmed_at: status.totp.confirmed_at,
          recovery_codes_left: status.recovery_codes_left,
          passkeys: status.passkeys,
          methods: status.methods.join(","),
        });
    });
  },
});

const reset = defineCommand({
  meta: {
    name: "reset",
    description: "Remove a user's TOTP factor, recovery codes and passkeys (succeeds when there is none)",
  },
  args: { ...userArg, ...remoteArgs },
  async run({ args }) {
    await withClient(args, async (client) => {
      const path = { user_uuid: await resolveUser(client, args.user) };
      await client.call("deleteUserMfaTotp", { params: { path } });
      await client.call("deleteUserPasskeys", { params: { path } });
      if (args.json) printJson({ reset: args.user });
      else console.log(`removed the second factors of user ${args.user}`);
    });
  },
});

// biome-ignore lint/suspicious/noExplicitAny: citty's CommandDef is invariant in its args
export const usersMfaCommand: CommandDef<any> = defineCommand({
  meta: { name: "mfa", description: "A user's second factors: show, reset" },
  subCommands: { show, reset },
});
