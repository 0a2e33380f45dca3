// Deny entries must hold whatever spelling a request uses for a resource. The required access is
// first checked with the path values as given; then every other name of the same resource (its
// stored uuid and slug, `me` as the caller's own uuid) fills the template again, and a deny entry
// matching any of them refuses the request. So `!auth.policies.<uuid>.delete` also stops
// `DELETE /policies/<UUID>` and `DELETE /policies/<slug>`, and `!auth.policies.Protected.delete`
// stops `DELETE /policies/protected`.
import type { AppContext } from "../boot/context.ts";
import { fillAcl } from "../domain/acl.ts";
import { findVisiblePolicy } from "../services/identity/policy-visibility.ts";
import type { Caller } from "../domain/caller.ts";
import { ApiError, orAbsent } from "../domain/errors.ts";
import { isUuid } from "../domain/validate.ts";

type Resolver = (app: AppContext, caller: Caller, value: string) => Promise<string[]>;

/** Every name of a resource a path parameter may name in other spellings, by parameter name. */
const RESOLVERS: Record<string, Resolver> = {
  policy: async (app, caller, value) => {
    // Unknown or invisible: no other spelling, and the handler answers 404. Any other failure (the
    // database down) propagates: a deny check is never skipped because a lookup failed.
    const found = await orAbsent(findVisiblePolicy(app, caller, value));
    return found ? [found.row.uuid, found.row.slug] : [];
  },
};

const PLACEHOLDER = /\{(\w+)\}/g;

async function spellings(app: AppContext, caller: Caller, name: string, value: string): Promise<string[]> {
  const forms = new Set([value]);
  if (isUuid(value)) forms.add(value.toLowerCase());
  const resolve = RESOLVERS[name];
  if (resolve) for (const f of await resolve(app, caller, value)) forms.add(f);
  return [...forms];
}

/** Every filling of `template` with every spelling of each parameter (a handful at most). */
async function filledAccesses(
  app: AppContext,
  caller: Caller,
  template: string,
  params: Record<string, string>,
): Promise<string[]> {
  let fills: Array<Record<string, string>> = [{}];
  for (const [, name] of template.matchAll(PLACEHOLDER)) {
    const forms = await spellings(app, caller, name!, String(params[name!] ?? ""));
    fills = fills.flatMap((f) => forms.map((v) => ({ ...f, [name!]: v })));
  }
  const own = caller.token.authId;
  return fills.flatMap((f) => {
    const access = fillAcl(template, f);
    const asOwn = access
      .split(".")
      .map((s) => (s === "me" ? own : s))
      .join(".");
    return asOwn === access ? [access] : [access, asOwn];
  });
}

/** 403 when a deny entry of the caller matches any spelling of the required access. */
export async function requireCanonicalAccess(
  app: AppContext,
  caller: Caller,
  template: string,
  params: Record<string, string>,
): Promise<void> {
  if (!template.includes("{") && !template.split(".").includes("me")) return;
  for (const access of await filledAccesses(app, caller, template, params)) {
    if (caller.token.matcher.denies(access)) {
      throw new ApiError(403, "forbidden", "Forbidden", "tokens", {
        reason: "missing_permission",
        required_access: access,
      });
    }
  }
}
