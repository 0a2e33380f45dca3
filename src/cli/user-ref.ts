// A user named on the command line by its UUID, its username or one of its email addresses
// (`tessera users show bob`): a name is looked up among the users the caller may see (the scoping
// tenant and below), compared case-insensitively as logins are.
import type { TesseraClient } from "../../clients/typescript/index.ts";
import { isUuid } from "../domain/validate.ts";
import { CliFailure, EXIT } from "./output.ts";
import { call } from "./remote.ts";

interface ListedUser {
  uuid: string;
  username: string | null;
  emails: Array<{ address: string }>;
}

/** The UUID of the user `ref` names; refused (exit 1) when none is visible, usage (exit 2) when several are. */
export async function resolveUser(client: TesseraClient, ref: string): Promise<string> {
  if (isUuid(ref)) return ref;
  const wanted = ref.normalize("NFC").toLowerCase();
  const { items } = (await call(client, "listUsers", {
    params: { query: { search: ref, recurse: true, limit: 100 } },
  })) as {
    items: ListedUser[];
  };
  const named = items.filter(
    (u) => u.username?.toLowerCase() === wanted || u.emails.some((e) => e.address.toLowerCase() === wanted),
  );
  if (named.length === 1) return named[0]!.uuid;
  if (named.length === 0) throw new CliFailure(`no user named "${ref}" (username or email) is visible`, EXIT.refused);
  throw new CliFailure(
    `several users are named "${ref}": give a UUID (${named.map((u) => u.uuid).join(", ")})`,
    EXIT.usage,
  );
}

/** `resolveUser` for an optional flag (`--user`, `--actor`). */
export const resolveOptionalUser = async (client: TesseraClient, ref: string | undefined) =>
  ref === undefined ? undefined : resolveUser(client, ref);
