// Email addresses and their confirmation (wazo-auth's email API, email confirmation). Confirmation tokens are
// single use (D10 of docs/wazo-auth-differences.md): the confirmation consumes the token.
import { mailLocale } from "../i18n/negotiate.ts";
import { and, eq, notInArray, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { emails, users } from "../../db/schema.ts";
import { changesOf, recordAudit } from "../audit/record.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { Conflict, InvalidData, NotFound } from "../../domain/errors.ts";
import type { ConnectionParams } from "../../plugins/email-types.ts";
import { sendConfirmation } from "../integrations/notifications.ts";
import { revokeToken } from "../auth/sessions.ts";
import { INTERNAL_AUTH_ID, insertToken, isEmailedToken } from "../auth/tokens.ts";
import { checkLoginsFree, type EmailJson } from "./users.ts";
import { requireVisibleUser } from "./visibility.ts";

export interface EmailInput {
  address: string;
  main?: boolean;
  confirmed?: boolean | null;
}

function invalidList(message: string): InvalidData {
  return new InvalidData("emails", { emails: { constraint_id: "predicate", constraint: null, message } });
}

/** Replaces a user's addresses; `admin` may set `confirmed`. Existing addresses keep uuid and state. */
export async function updateEmails(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  input: EmailInput[],
  admin: boolean,
): Promise<EmailJson[]> {
  const mains = input.filter((e) => e.main).length;
  if (input.length > 0 && mains === 0) throw invalidList("At least one address should be main");
  if (mains > 1) throw invalidList("Only one address should be main");
  const lower = input.map((e) => e.address.toLowerCase());
  if (new Set(lower).size !== lower.length) throw invalidList("The same address can only be used once");
  return inTransaction(app, async (tx) => {
    const user = await requireVisibleUser(app, caller, userUuid, tx);
    await checkLoginsFree(
      tx,
      input.map((e) => ({ login: e.address, field: "email_address" })),
      user.uuid,
    );
    const existing = await tx.select().from(emails).where(eq(emails.userUuid, user.uuid));
    if (lower.length)
      await tx
        .delete(emails)
        .where(and(eq(emails.userUuid, user.uuid), notInArray(sql`lower(${emails.address})`, lower)));
    else await tx.delete(emails).where(eq(emails.userUuid, user.uuid));
    const out: EmailJson[] = [];
    for (const e of input) {
      const old = existing.find((x) => x.address.toLowerCase() === e.address.toLowerCase());
      const confirmed =
        admin && e.confirmed != null ? e.confirmed : (old?.confirmed ?? (admin ? (e.confirmed ?? false) : false));
      const main = e.main ?? false;
      const [row] = old
        ? await tx
            .update(emails)
            .set({ address: e.address, main, confirmed })
            .where(eq(emails.uuid, old.uuid))
            .returning()
        : await tx.insert(emails).values({ address: e.address, main, confirmed, userUuid: user.uuid }).returning();
      out.push({ uuid: row!.uuid, address: row!.address, main: row!.main, confirmed: row!.confirmed });
    }
    const shown = (list: Array<{ address: string; main: boolean; confirmed: boolean }>) =>
      list.map((e) => ({ address: e.address, main: e.main, confirmed: e.confirmed }));
    await recordAudit(app, tx, caller, {
      action: "user.emails.update",
      target: { kind: "user", uuid: user.uuid, tenantUuid: user.tenantUuid },
      changes: changesOf({ emails: shown(existing) }, { emails: shown(out) }),
    });
    return out;
  });
}

/** Issues a single-purpose confirmation token and mails it, inside `tx` (a failed send undoes it). */
export async function mailConfirmation(
  app: AppContext,
  tx: DbOrTx,
  email: { uuid: string; address: string },
  username: string | null,
  conn: ConnectionParams,
  locale?: string,
): Promise<void> {
  const issued = await insertToken(app, tx, {
    authId: INTERNAL_AUTH_ID,
    pbxUserUuid: null,
    acl: [confirmAcl(email.uuid)],
    metadata: {},
    expiration: app.config.email_confirmation_expiration,
    userAgent: "wazo-auth-email-reset",
    remoteAddr: "",
    sessionTenantUuid: app.topTenantUuid,
    mobile: false,
  });
  await sendConfirmation(app, {
    ...conn,
    token: issued.record.uuid,
    username,
    ...(locale ? { locale } : {}),
    email_uuid: email.uuid,
    email_address: email.address,
  });
}

/**
 * GET /users/{u}/emails/{e}/confirm: mail a new confirmation link for an unconfirmed address. The
 * link's parts are asked for (`conn`, which may refuse: no public_url) only once the caller may see
 * the address, so a caller of another tenant gets the 404 it gets everywhere.
 */
export async function requestConfirmation(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  emailUuid: string,
  conn: () => ConnectionParams,
): Promise<void> {
  await inTransaction(app, async (tx) => {
    const user = await requireVisibleUser(app, caller, userUuid, tx);
    const [email] = await tx
      .select()
      .from(emails)
      .where(and(eq(emails.uuid, emailUuid), eq(emails.userUuid, user.uuid)));
    if (!email) throw new NotFound("emails", emailUuid);
    if (email.confirmed)
      throw new Conflict(
        "emails",
        { uuid: { constraint_id: "unique", constraint: emailUuid, message: "The address is already confirmed" } },
        "Email already confirmed",
        emailUuid,
      );
    await mailConfirmation(app, tx, email, user.username, conn(), mailLocale(app.config, user));
  });
}

const confirmAcl = (emailUuid: string) => `auth.emails.${emailUuid}.confirm.edit`;

/**
 * Confirms the address. The emailed token acts whatever the tenant and is consumed (D10 of docs/wazo-auth-differences.md); any other
 * caller must see the address's owner (D9 of docs/wazo-auth-differences.md), else 404 and nothing changes.
 */
/** Confirms the address; returns its owner's language and tenant (the confirmation page's language). */
export async function confirmEmail(
  app: AppContext,
  caller: Caller,
  emailUuid: string,
): Promise<{ locale: string | null; tenantUuid: string | null }> {
  const emailed = isEmailedToken(caller, confirmAcl(emailUuid));
  const owner = await inTransaction(app, async (tx) => {
    const [email] = await tx.select().from(emails).where(eq(emails.uuid, emailUuid));
    if (!email) throw new NotFound("emails", emailUuid);
    if (!emailed) await orNotFound(requireVisibleUser(app, caller, email.userUuid, tx), "emails", emailUuid);
    await tx.update(emails).set({ confirmed: true }).where(eq(emails.uuid, emailUuid));
    const [owner] = await tx
      .select({ tenantUuid: users.tenantUuid, locale: users.locale })
      .from(users)
      .where(eq(users.uuid, email.userUuid));
    await recordAudit(app, tx, caller, {
      action: "email.confirm",
      target: { kind: "email", uuid: email.uuid, tenantUuid: owner?.tenantUuid ?? null },
      changes: changesOf({ confirmed: email.confirmed }, { confirmed: true }),
    });
    return { locale: owner?.locale ?? null, tenantUuid: owner?.tenantUuid ?? null };
  });
  if (emailed) await revokeToken(app, caller.token.uuid);
  return owner;
}

/** The owner's 404 becomes the address's own 404: the caller learns nothing about the owner. */
async function orNotFound<T>(p: Promise<T>, resource: string, id: string): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof NotFound) throw new NotFound(resource, id);
    throw e;
  }
}
