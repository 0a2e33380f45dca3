// `tessera audit`: the audit trail (docs/audit.md). `tessera audit [list] [--since 1h] [--actor U]
// [--action user.*] [--follow]` lists entries through the typed client (GET /0.1/audit); `export
// --format jsonl` writes every matching entry, one JSON object a line, for a SIEM; `verify` checks
// the hash chains on the configured database (local, like `migrate`) and names the first broken link.
import { defineCommand } from "citty";
import type { TesseraClient } from "../../clients/typescript/index.ts";
import { configArg, withLocalApp } from "./local.ts";
import { CliFailure, EXIT, printJson, printTable } from "./output.ts";
import { call, remoteArgs, withClient, type RemoteArgs } from "./remote.ts";
import { resolveOptionalUser } from "./user-ref.ts";

const str = { type: "string" } as const;

const filterArgs = {
  since: { ...str, description: "From this time: ISO 8601, or an age (30m, 1h, 7d)", valueHint: "TIME" },
  until: { ...str, description: "Before this time: ISO 8601, or an age", valueHint: "TIME" },
  actor: { ...str, description: "Entries acted by this user (UUID, username or email)", valueHint: "USER" },
  target: { ...str, description: "Entries about this resource (UUID)", valueHint: "UUID" },
  "target-kind": { ...str, description: "user, tenant, group, policy, session, …", valueHint: "KIND" },
  action: { ...str, description: "An action, or a prefix ending in * (user.*)", valueHint: "NAME" },
  outcome: { ...str, description: "success, invalid_credentials, throttled, …", valueHint: "OUTCOME" },
  recurse: { type: "boolean", description: "Include the sub-tenants' entries", default: false },
} as const;

/** `1h` → the ISO time an hour ago; an ISO 8601 value as given. */
export function timeArg(value: string | undefined, now = Date.now()): string | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+)\s*(s|m|h|d|w)$/.exec(value.trim());
  if (!m) return value;
  const unit = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 }[m[2] as "s"]!;
  return new Date(now - Number(m[1]) * unit * 1000).toISOString();
}

interface Entry {
  uuid: string;
  time: string;
  actor: { user_uuid: string | null; address: string | null };
  action: string;
  target: { kind: string | null; uuid: string | null };
  outcome: string;
  changes: Array<{ field: string }>;
}

type FilterArgs = { [K in keyof typeof filterArgs]?: string | boolean };

function query(args: FilterArgs, extra: Record<string, unknown>) {
  const q: Record<string, unknown> = {
    since: timeArg(args.since as string | undefined),
    until: timeArg(args.until as string | undefined),
    actor_uuid: args.actor,
    target_uuid: args.target,
    target_kind: args["target-kind"],
    action: args.action,
    outcome: args.outcome,
    recurse: args.recurse || undefined,
    ...extra,
  };
  return { params: { query: Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined)) } };
}

const page = async (client: TesseraClient, args: FilterArgs, extra: Record<string, unknown>) =>
  (await call(client, "listAudit", query(args, extra))) as { items: Entry[]; total: number; filtered: number };

const row = (e: Entry) => ({
  time: e.time,
  action: e.action,
  outcome: e.outcome,
  actor: e.actor.user_uuid ?? "-",
  address: e.actor.address ?? "-",
  target: e.target.kind ? `${e.target.kind}:${e.target.uuid ?? "-"}` : "-",
  changed: e.changes.map((c) => c.field).join(",") || "-",
});

const COLUMNS = ["time", "action", "outcome", "actor", "address", "target", "changed"];

/** Every entry after `after`, oldest first, one page at a time (keyset paging). */
async function* entriesAfter(client: TesseraClient, args: FilterArgs, after: string | undefined) {
  let cursor = after;
  for (;;) {
    const { items } = await page(client, args, { direction: "asc", limit: 500, ...(cursor ? { after: cursor } : {}) });
    yield* items;
    if (items.length < 500) return;
    cursor = items[items.length - 1]!.uuid;
  }
}

const exportCommand = defineCommand({
  meta: {
    name: "export",
    description: "Write every matching entry, oldest first, one JSON object a line (for a SIEM)",
  },
  args: { format: { ...str, description: "jsonl (the only format)", default: "jsonl" }, ...filterArgs, ...remoteArgs },
  async run({ args }) {
    if (args.format !== "jsonl")
      throw new CliFailure(`tessera audit export: unknown format "${args.format}" (jsonl)`, EXIT.usage);
    await withClient(args, async (client) => {
      const filters = { ...args, actor: await resolveOptionalUser(client, args.actor) };
      for await (const e of entriesAfter(client, filters, undefined)) process.stdout.write(`${JSON.stringify(e)}\n`);
    });
  },
});

const verifyCommand = defineCommand({
  meta: { name: "verify", description: "Check the hash chains on the configured database; name the first broken link" },
  args: {
    ...configArg,
    tenant: { ...str, description: "Only this tenant's chains", valueHint: "UUID" },
    json: { type: "boolean", default: false, description: "JSON output" },
  },
  async run({ args }) {
    const { verifyAudit } = await import("../services/audit/chain.ts");
    const report = await withLocalApp(args.config, (app) => verifyAudit(app, args.tenant));
    if (args.json) printJson(report);
    else if (report.ok) console.log(`audit trail intact: ${report.entries} entries in ${report.chains} chains`);
    if (!report.ok) {
      throw new CliFailure(
        `tessera audit verify: broken at entry ${report.broken!.seq} of tenant ${report.broken!.tenant_uuid}, chain ${report.broken!.lane}${report.broken!.uuid ? ` (${report.broken!.uuid})` : ""}: ${report.broken!.message}`,
        EXIT.refused,
      );
    }
  },
});

const listArgs = {
  ...filterArgs,
  limit: { ...str, description: "How many entries (newest first; default 50)", valueHint: "N" },
  follow: { type: "boolean", description: "Then keep printing new entries as they are recorded", default: false },
  ...remoteArgs,
} as const;

type ListArgs = FilterArgs & RemoteArgs & { limit?: string; follow: boolean };

async function listEntries(given: ListArgs): Promise<void> {
  await withClient(given, async (client) => {
    const args = { ...given, actor: await resolveOptionalUser(client, given.actor as string | undefined) };
    const { items } = await page(client, args, { limit: Number(args.limit ?? 50) });
    const shown = items.reverse(); // oldest first on a terminal, like a log
    if (args.json && !args.follow) printJson(shown);
    else if (args.json) for (const e of shown) console.log(JSON.stringify(e));
    else printTable(shown.map(row), COLUMNS);
    if (!args.follow) return;
    let last = shown[shown.length - 1]?.uuid;
    for (;;) {
      await new Promise((r) => setTimeout(r, 1000));
      for await (const e of entriesAfter(client, args, last)) {
        if (args.json) console.log(JSON.stringify(e));
        else printTable([row(e)], COLUMNS);
        last = e.uuid;
      }
    }
  });
}

const listCommand = defineCommand({
  meta: { name: "list", description: "List entries, newest last (--follow: keep printing new ones)" },
  args: listArgs,
  run: ({ args }) => listEntries(args),
});

const SUBCOMMANDS = { list: listCommand, export: exportCommand, verify: verifyCommand };

/** `tessera audit [list]`: the bare command lists too, as it always did. */
export const auditCommand = defineCommand({
  meta: { name: "audit", description: "The audit trail: list (--follow), export, verify" },
  args: listArgs,
  subCommands: SUBCOMMANDS,
  async run({ args, rawArgs }) {
    // citty ran the sub-command (it takes the first argument that is not an option as one)
    const first = rawArgs.find((a) => !a.startsWith("-"));
    if (first && Object.hasOwn(SUBCOMMANDS, first)) return;
    await listEntries(args);
  },
});
