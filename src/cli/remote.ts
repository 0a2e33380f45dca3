// What every remote command shares: where the service is (`--url`), who calls (a token, or
// credentials the CLI logs in with and revokes afterwards, else the session `tessera login`
// stored), which tenant (`Wazo-Tenant`), and `--json`. Flags win over the environment.
import type { ArgsDef, CommandDef } from "citty";
import {
  createTesseraClient,
  TesseraError,
  type OperationId,
  type TesseraClient,
} from "../../clients/typescript/index.ts";
import { CliFailure, EXIT } from "./output.ts";
import { storedToken } from "./session-store.ts";

export const remoteArgs = {
  url: {
    type: "string",
    description: "Tessera's URL (env TESSERA_URL)",
    default: process.env.TESSERA_URL ?? "http://127.0.0.1:9497",
    valueHint: "URL",
  },
  token: { type: "string", description: "A token to act with (env TESSERA_TOKEN)", valueHint: "TOKEN" },
  "auth-user": {
    type: "string",
    description: "Log in as this user instead of --token (env TESSERA_AUTH_USER)",
    valueHint: "NAME",
  },
  "auth-password": {
    type: "string",
    description: "Its password (env TESSERA_AUTH_PASSWORD; prefer the environment)",
    valueHint: "PASSWORD",
  },
  tenant: {
    type: "string",
    description: "Act in this sub-tenant: Wazo-Tenant (env TESSERA_TENANT)",
    valueHint: "UUID|SLUG",
  },
  json: { type: "boolean", description: "JSON output (for scripts)", default: false },
} as const satisfies ArgsDef;

export interface RemoteArgs {
  url: string;
  token?: string;
  "auth-user"?: string;
  "auth-password"?: string;
  tenant?: string;
  json: boolean;
}

// Commands with different argument sets live in one table.
// biome-ignore lint/suspicious/noExplicitAny: citty's CommandDef is invariant in its args
export type AnyCommand = CommandDef<any>;

/** One operation by its id, the request built at run time (the commands are table-driven). */
export const call = (client: TesseraClient, id: OperationId, init?: unknown): Promise<unknown> =>
  (client.call as (id: OperationId, init?: unknown) => Promise<unknown>)(id, init ?? {});

/**
 * Runs `work` with a client holding a token: --token, else credentials (a token the CLI logs in for
 * and revokes after), else the stored session of `tessera login` (never revoked here).
 */
export async function withClient<T>(
  args: RemoteArgs,
  work: (client: TesseraClient) => Promise<T>,
  opts: { needsToken?: boolean } = {},
): Promise<T> {
  const client = createTesseraClient({ baseUrl: args.url, tenant: args.tenant ?? process.env.TESSERA_TENANT });
  const token = args.token ?? process.env.TESSERA_TOKEN;
  const user = args["auth-user"] ?? process.env.TESSERA_AUTH_USER;
  const password = args["auth-password"] ?? process.env.TESSERA_AUTH_PASSWORD;
  let ownToken = false;
  try {
    if (token) client.token = token;
    else if (user && password) {
      await client.login({ username: user, password, expiration: 600 });
      ownToken = true;
    } else if (opts.needsToken !== false) {
      client.token = (await storedToken(client, args.url)) ?? undefined;
      if (!client.token)
        throw new CliFailure(
          "no credentials: run `tessera login`, or give --token (TESSERA_TOKEN) or --auth-user and --auth-password (TESSERA_AUTH_USER, TESSERA_AUTH_PASSWORD)",
          EXIT.usage,
        );
    }
    return await work(client);
  } catch (e) {
    throw asFailure(e, args.url);
  } finally {
    if (ownToken) await client.revokeToken().catch(() => {});
  }
}

/** Maps what can go wrong talking to the service onto a message and an exit code. */
export function asFailure(e: unknown, url: string): unknown {
  if (e instanceof CliFailure) return e;
  if (e instanceof TesseraError) {
    const what = e.body ? `${e.body.error_id}: ${e.body.message}${detailsText(e.body.details)}` : `HTTP ${e.status}`;
    return new CliFailure(
      `${e.operation} failed (${e.status} ${what})`,
      e.status >= 500 ? EXIT.unavailable : EXIT.refused,
    );
  }
  if (
    e instanceof TypeError ||
    (e as { code?: string })?.code === "ConnectionRefused" ||
    /fetch|connect|ECONNREFUSED/i.test(String((e as Error)?.message))
  ) {
    return new CliFailure(`cannot reach Tessera at ${url}: ${(e as Error).message}`, EXIT.unavailable);
  }
  return e;
}

function detailsText(details: Record<string, unknown> | undefined): string {
  if (!details || Object.keys(details).length === 0) return "";
  return ` — ${Object.entries(details)
    .map(([k, v]) => `${k}: ${(v as { message?: string })?.message ?? JSON.stringify(v)}`)
    .join("; ")}`;
}
