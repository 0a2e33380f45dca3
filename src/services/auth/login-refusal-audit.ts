// A refused login in the audit trail (docs/audit.md "What a tenant administrator sees"). When the login
// name names a user, the entry is about that user and lives in that user's tenant, so the user's own
// administrators see the attacks on their users. A name that names nobody stays in the master
// tenant's trail: an administrator of a sub-tenant learns nothing about names that exist elsewhere,
// nor about attempts on other tenants' users (the entry is where the named user is, never where the
// attacker's own account is).
import type { AppContext } from "../../boot/context.ts";
import type { LoginArgs } from "../../plugins/types.ts";
import type { AuditActor, AuditEntry } from "../audit/record.ts";
import { findLoginUser } from "./user-auth.ts";

/** Who tried: nobody authenticated, from this address and user agent. */
export function loginActor(req: { remoteAddr: string; userAgent: string }): AuditActor {
  return { userUuid: null, sessionUuid: null, tenantUuid: null, address: req.remoteAddr, userAgent: req.userAgent };
}

/**
 * The entry of a refused login: about the user the login name names, if any; the attempted name is
 * its only "change" (never the password). The user is the one the login already read (`args`), or
 * read now; read outside any transaction (PGlite has one connection: call it before opening one).
 */
export async function loginRefusalEntry(
  app: AppContext,
  req: { login: string | null },
  action: string,
  outcome: string,
  args?: LoginArgs,
): Promise<AuditEntry> {
  const login = req.login?.replaceAll("\0", "\uFFFD") ?? null;
  const user = await namedUser(app, req.login, args);
  const target = user ? { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid } : { kind: "login" };
  return { action, outcome, target, changes: [{ field: "login", old: null, new: login }] };
}

async function namedUser(app: AppContext, login: string | null, args: LoginArgs | undefined) {
  if (!login) return null;
  try {
    return await findLoginUser(app.db, login, args);
  } catch {
    // The database is failing: the entry stays the master tenant's (its own insert reports the outage).
    return null;
  }
}
