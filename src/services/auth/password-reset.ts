// Password reset (wazo-auth's password-reset API, password reset). Asking for a reset always answers the same, at
// once: the lookup and the mail happen after the answer, so neither the answer nor its timing tells
// whether the user exists. The emailed token is single use (D10 of docs/wazo-auth-differences.md).
import { and, eq, sql, type SQL } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { emails, sessions, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import type { Caller } from "../../domain/caller.ts";
import { Forbidden, NotFound } from "../../domain/errors.ts";
import { normalizeLogin } from "../../domain/strings.ts";
import type { ConnectionParams } from "../../plugins/email-types.ts";
import { assertNotThrottled, countFailure, type ThrottleSubject } from "./login-throttle.ts";
import { effectiveMethod } from "./identity-providers.ts";
import { storedLoginKey, typedLoginKey } from "../identity/login-names.ts";
import { namingMailFailure, sendPasswordReset } from "../integrations/notifications.ts";
import { revokeToken } from "./sessions.ts";
import { INTERNAL_AUTH_ID, insertToken, isEmailedToken } from "./tokens.ts";
import { setPassword } from "../identity/users.ts";
import { requireVisibleUser, type UserRow } from "../identity/visibility.ts";
import { errorFields } from "../../observe/log.ts";
import { mailLocale } from "../i18n/negotiate.ts";

export type ResetQuery = { username: string } | { email: string } | { login: string };

async function findUser(
  app: AppContext,
  given: ResetQuery,
): Promise<{ user: UserRow; destination: string | null } | null> {
  // Usernames are stored NFC-normalised; so is what the caller typed.
  const q: ResetQuery =
    "username" in given
      ? { username: normalizeLogin(given.username) }
      : "login" in given
        ? { login: normalizeLogin(given.login) }
        : given;
  const byName = async (cond: SQL) => (await app.db.select().from(users).where(cond).limit(1))[0];
  const byEmail = async (cond: SQL) =>
    (
      await app.db
        .select({ user: users })
        .from(emails)
        .innerJoin(users, eq(users.uuid, emails.userUuid))
        .where(cond)
        .limit(1)
    )[0]?.user;
  let user: UserRow | undefined;
  if ("username" in q) user = await byName(eq(users.username, q.username));
  else if ("email" in q) user = await byEmail(eq(emails.address, q.email));
  else
    user =
      (await byName(sql`${storedLoginKey(users.username)} = ${typedLoginKey(q.login)}`)) ??
      (await byEmail(sql`lower(${emails.address}) = lower(${q.login})`));
  if (!user) return null;
  if ("email" in q) return { user, destination: q.email };
  const confirmed = await app.db
    .select()
    .from(emails)
    .where(and(eq(emails.userUuid, user.uuid), eq(emails.confirmed, true)));
  const destination = confirmed.find((e) => e.main) ?? confirmed[0];
  return { user, destination: destination?.address ?? null };
}

/** The single-purpose token mailed by the reset request for this very user. */
const resetAcl = (userUuid: string) => `auth.users.password.reset.${userUuid}.create`;

/** Mails a reset link when there is someone to mail; throws when the mail cannot be sent. */
async function mailReset(
  app: AppContext,
  found: Awaited<ReturnType<typeof findUser>>,
  conn: ConnectionParams,
): Promise<void> {
  if (!found?.destination) return;
  const { user, destination } = found;
  if ((await effectiveMethod(app.db, user.authenticationMethod, user.tenantUuid)) !== "native") return;
  // The token is committed before the mail goes out, and dropped if it cannot go: a transaction held
  // open across an SMTP exchange would stall every other query on the embedded database (one
  // connection), and the next reset request's throttle check would time this one's mail.
  const issued = await inTransaction(app, (tx) =>
    insertToken(app, tx, {
      authId: INTERNAL_AUTH_ID,
      pbxUserUuid: null,
      acl: [resetAcl(user.uuid)],
      metadata: {},
      expiration: app.config.password_reset_expiration,
      userAgent: "wazo-auth-email-reset",
      remoteAddr: "",
      sessionTenantUuid: app.topTenantUuid,
      mobile: false,
    }),
  );
  try {
    await sendPasswordReset(app, {
      ...conn,
      token: issued.record.uuid,
      locale: mailLocale(app.config, user),
      username: user.username,
      user_uuid: user.uuid,
      email_address: destination,
    });
  } catch (e) {
    await app.db.delete(sessions).where(eq(sessions.uuid, issued.record.sessionUuid));
    throw e;
  }
}

/**
 * GET /users/password/reset: refuses (429) a login or address that asked too often — one cheap
 * query, the same for known and unknown logins — then counts the request and mails the link in
 * the background. Returns the background work for tests and graceful shutdown.
 *
 * An administrator's request (`admin`: the caller of a valid token that sees the user and may set
 * its password) is answered once the mail went: a failure to send is its 503 naming the cause,
 * where an anonymous caller's answer says nothing (it must not tell whether the user exists).
 */
export async function requestPasswordReset(
  app: AppContext,
  q: ResetQuery,
  conn: ConnectionParams,
  origin: { address: string; forwarded: boolean },
  admin: Caller | null = null,
): Promise<{ done: Promise<void> }> {
  const subject: ThrottleSubject = {
    action: "password_reset",
    login: Object.values(q)[0] ?? null,
    remoteAddr: origin.address,
    forwarded: origin.forwarded,
  };
  await assertNotThrottled(app, subject, "reset");
  if (admin) {
    const found = await findUser(app, q);
    if (found && (await administers(app, admin, found.user))) {
      await inTransaction(app, (tx) => countFailure(app, tx, subject));
      await namingMailFailure(mailReset(app, found, conn));
      return { done: Promise.resolve() };
    }
  }
  const done = inTransaction(app, (tx) => countFailure(app, tx, subject))
    .then(async () => mailReset(app, await findUser(app, q), conn))
    .catch((e) => app.log.warn("password reset email not sent", errorFields(e)));
  return { done };
}

/** The caller sees the user (tenant isolation) and may set its password. */
async function administers(app: AppContext, caller: Caller, user: UserRow): Promise<boolean> {
  if (!caller.token.matcher.matches(resetAcl(user.uuid))) return false;
  try {
    await requireVisibleUser(app, caller, user.uuid);
    return true;
  } catch (e) {
    if (e instanceof NotFound) return false;
    throw e;
  }
}

/**
 * POST /users/password/reset: sets (or, with null, removes) the password. Only the emailed token
 * acts whatever the tenant (and is consumed); any other caller must see the user (D9 of docs/wazo-auth-differences.md), else 404.
 */
export async function resetPassword(
  app: AppContext,
  caller: Caller,
  userUuid: string,
  password: string | null,
  mustChange = false,
): Promise<void> {
  const emailed = isEmailedToken(caller, resetAcl(userUuid));
  // One's own password is changed with the old one (PUT /users/{uuid}/password): an administrator's
  // token alone — stolen, left open — must not set its own user's password and keep the account.
  if (!emailed && caller.userUuid !== null && caller.userUuid.toLowerCase() === userUuid.toLowerCase())
    throw new Forbidden(
      "reset",
      "A user cannot reset their own password here: change it with PUT /0.1/users/{user_uuid}/password, which needs the old password",
      { user_uuid: userUuid },
    );
  const user = emailed
    ? (await app.db.select().from(users).where(eq(users.uuid, userUuid)))[0]
    : await requireVisibleUser(app, caller, userUuid);
  if (!user) throw new NotFound("users", userUuid);
  // The emailed link is the user's own reset: never "must change" (the user just chose it).
  await setPassword(app, user, password, caller, emailed ? "user.password.reset" : "user.password.set", {
    mustChange: !emailed && mustChange,
  });
  if (emailed) await revokeToken(app, caller.token.uuid);
}
