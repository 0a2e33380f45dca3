// `/Me` (RFC 7644 §3.11): the User resource of the authenticated subject, when the bearer is a
// user's token. A user changes through it only what is its own to change — its names, its language
// and the attributes the directory keeps (title, phone numbers, …) — never what grants or admits:
// `active`, `groups`, `userName` and `emails` (logins: claiming an address needs its owner's
// confirmation, and the wazo API lets no user rename itself), `password` (the wazo API asks the
// old one: PUT /users/{uuid}/password), `externalId` and the Enterprise extension (the directory's
// data). A change to any of those is a 400 `mutability` (§3.12) and nothing is written.
import { ScimError, mutability } from "./errors.ts";
import { keyOf } from "./filter-match.ts";
import { ENTERPRISE_SCHEMA } from "./schemas.ts";
import type { UserState } from "./user-mapping.ts";
import {
  deleteScimUser,
  getScimUser,
  patchScimUser,
  replaceScimUser,
  type ScimScope,
  type StateGuard,
} from "./users.ts";
import type { ScimQuery } from "./list.ts";

type Json = Record<string, unknown>;

/** §3.11: a subject that is not a User (a SCIM token, a client's token) has no /Me: 501. */
export const NO_ME = "/Me is the authenticated user's resource: this bearer token is not a user's (RFC 7644 §3.11)";

function meOf(scope: ScimScope): string {
  if (!scope.caller.userUuid) throw new ScimError(501, null, NO_ME);
  return scope.caller.userUuid;
}

/** A user that is no SCIM User (a service account of another purpose) has no /Me either. */
async function asMe<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof ScimError && e.status === 404) throw new ScimError(501, null, NO_ME);
    throw e;
  }
}

const enterpriseOf = (s: UserState) =>
  JSON.stringify(s.attributes[keyOf(s.attributes, ENTERPRISE_SCHEMA) ?? ""] ?? null);

const PROTECTED: Array<[string, (s: UserState) => unknown]> = [
  ["userName", (s) => s.username],
  ["emails", (s) => JSON.stringify(s.emails.map((e) => e.toLowerCase()))],
  ["active", (s) => s.enabled],
  ["password", (s) => s.password],
  ["externalId", (s) => s.externalId],
  [ENTERPRISE_SCHEMA, enterpriseOf],
];

/** Refuses a change of a protected attribute; `password` is refused whenever one is sent. */
export const selfChangeGuard: StateGuard = (before, after) => {
  for (const [name, of] of PROTECTED) {
    const changed = name === "password" ? after.password !== null : of(before) !== of(after);
    if (changed) throw mutability(`${name} cannot be changed through /Me`);
  }
};

export const getScimMe = (scope: ScimScope, q?: ScimQuery): Promise<Json> =>
  asMe(() => getScimUser(scope, meOf(scope), q));

export const replaceScimMe = (scope: ScimScope, body: unknown, ifMatch?: string): Promise<Json> =>
  asMe(() => replaceScimUser(scope, meOf(scope), body, ifMatch, selfChangeGuard));

export const patchScimMe = (scope: ScimScope, body: unknown, ifMatch?: string): Promise<Json> =>
  asMe(() => patchScimUser(scope, meOf(scope), body, ifMatch, selfChangeGuard));

export const deleteScimMe = (scope: ScimScope, ifMatch?: string): Promise<void> =>
  asMe(() => deleteScimUser(scope, meOf(scope), ifMatch));
