// The login pipeline of POST /0.1/token (docs/api.md, wazo-auth's login flow): pick the
// identity provider, authenticate, check the user's authentication method, then issue the token.
import { and, eq, sql } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import type { DbOrTx } from "../../db/index.ts";
import { accesses, policies, policyAccesses, sessions, tokens } from "../../db/schema.ts";
import { backendForMethod, effectiveMethod, resolveMethod } from "./identity-providers.ts";
import { inTransaction } from "../../db/tx.ts";
import { describeCause } from "../../db/failures.ts";
import { isDatabaseUnavailable } from "../../db/errors.ts";
import {
  ApiError,
  AuthenticationFailed,
  MfaRequired,
  type ProvenPassword,
  SecondFactorLocked,
  ServiceUnavailable,
  TooManySessions,
} from "../../domain/errors.ts";
import { isUuid } from "../../domain/validate.ts";
import type { BackendPlugin, IdpPlugin, LoginArgs } from "../../plugins/types.ts";
import { publishEvent, sessionCreatedEvent } from "../events.ts";
import { issueRefreshToken, type RefreshTokenOutcome } from "./refresh-tokens.ts";
import { insertToken, tokenJson, type TokenJson } from "./tokens.ts";
import { oldestSessionsOf, revokeSessions } from "./sessions.ts";
import { findLoginUser, findUserByLogin, knownLoginUser } from "./user-auth.ts";
import { assertNotThrottled, clearLoginFailures, countFailure, type ThrottleSubject } from "./login-throttle.ts";
import { recordLogin } from "../../observe/metrics.ts";
import { secondFactorStep, type SecondFactorOutcome } from "./mfa-login.ts";
import { mfaRestrictedAcl, withSelfService } from "./mfa-policy.ts";
import { pendingActionsAcl } from "./password-change.ts";
import { vouchedByIdentityProvider } from "./vouched.ts";
import { auditInsert, auditOutboxInsert, recordAudit, recordRefusalEntry } from "../audit/record.ts";
import { loginActor, loginRefusalEntry } from "./login-refusal-audit.ts";

export interface TokenRequestBody {
  backend?: string;
  expiration?: number;
  access_type?: "online" | "offline";
  client_id?: string;
  refresh_token?: string;
  saml_session_id?: string;
  /** A sign-in an upstream OpenID Connect provider completed (plugins/idp/oidc.ts). */
  upstream_login?: string;
  /** An ID token of a tenant's upstream OpenID provider (plugins/idp/oidc.ts). */
  idp_token?: string;
  tenant_id?: string;
  domain_name?: string;
  /** A TOTP or recovery code, for a user with a second factor (mfa-login.ts). */
  mfa_code?: string;
}

export interface LoginRequest {
  login: string | null;
  password: string | null;
  body: TokenRequestBody;
  mobile: boolean;
  userAgent: string;
  remoteAddr: string;
  /** The address came from a trusted proxy's X-Forwarded-For (never exempt from throttling). */
  forwarded: boolean;
  headers: Record<string, string>;
  /** Narrows the token's ACL before it is written (OIDC ACL scopes, services/oidc/acl-scope.ts). */
  narrowAcl?: (acl: string[], id: { authId: string }) => string[];
  /**
   * The hosted login page: instead of an enrol-only token, a user who must enrol gets MfaRequired
   * with `enrol` set, and the page walks them through it (web/flow/second-step.ts).
   */
  interactive?: boolean;
  /**
   * The session of the sign-in an OpenID Connect refresh continues (services/oidc/grants/
   * refresh-token.ts): the new token joins it — no new session, no session cap, no
   * `auth_session_created` — and a session that ended (or is not the user's) refuses the login.
   */
  continueSession?: string;
  /**
   * The sign-in this login continues (an OpenID refresh, a browser session's single sign-on) met the
   * tenant's MFA requirement at a trusted upstream provider (`amr` `oidc mfa`): no enrol-only ACL.
   */
  mfaMetUpstream?: boolean;
}

export interface LoginResult {
  token: TokenJson;
  sessionsRevoked: number;
  /** A second-factor code was given with the password (`mfa_code` or appended to it). */
  codeAccepted?: boolean;
  /** A trusted upstream provider's `amr` met the tenant's MFA requirement (the ID token's `amr` says `mfa`). */
  upstreamMfa?: boolean;
}

interface Authenticated {
  /** The IdP that accepted the login (for its `onTokenIssued`). */
  idp?: IdpPlugin;
  backend: BackendPlugin;
  backendName: string;
  login: string;
  method: string;
  persistentMetadata: Record<string, unknown>;
  refreshTokenUuid: string | null;
  /** Set by the second-factor step for a user who must enrol first: the token's whole ACL. */
  enrolOnlyAcl?: string[] | null;
}

class LoginRefused extends Error {}

export async function login(app: AppContext, req: LoginRequest): Promise<LoginResult> {
  const args: LoginArgs = {
    login: req.login,
    password: req.password,
    mobile: req.mobile,
    userAgent: req.userAgent,
    remoteAddr: req.remoteAddr,
    body: req.body as Record<string, unknown>,
    headers: req.headers,
    acl: [],
  };
  // Checked before any IdP runs, so a locked login or address costs no password derivation.
  const subject = throttleSubject(app, args, req.forwarded);
  let known: { loginFailures: boolean };
  try {
    known = await assertNotThrottled(app, subject, "tokens");
  } catch (e) {
    const throttled = e instanceof ApiError && e.status === 429;
    recordLogin(throttled ? "throttled" : "error");
    if (throttled) await recordRefusal(app, req, args, "login.throttled", "throttled");
    throw e;
  }
  let method = "unknown";
  let checkingSecondFactor = false;
  try {
    const auth = await authenticate(app, args);
    method = auth.method;
    // Refresh-token logins (the only ones without an IdP) were issued after the second factor: no
    // code asked again. The tenant's requirement still applies: the refresh token may predate it.
    checkingSecondFactor = true;
    const step = auth.idp
      ? await secondFactor(app, args, auth, req)
      : { enrolOnlyAcl: req.mfaMetUpstream ? null : await mfaRestrictedAcl(app, knownLoginUser(args, auth.login)) };
    checkingSecondFactor = false;
    const user = knownLoginUser(args, auth.login);
    const mustChange = user?.passwordChangeRequired === true && !vouchedByIdentityProvider([auth.method]);
    if (mustChange && req.interactive && auth.idp) throw passwordChangeDue(args, auth);
    auth.enrolOnlyAcl = pendingActionsAcl(step?.enrolOnlyAcl ?? null, mustChange ? user : null);
    const result = await issue(app, args, auth, req);
    if (step?.codeAccepted) result.codeAccepted = true;
    if (upstreamMfaMet(args, auth)) result.upstreamMfa = true;
    app.log.info("login", { outcome: "success", login: auth.login, idp: auth.method, remote_addr: req.remoteAddr });
    // Failures counted after the check (another attempt, at the same moment) stay counted.
    if (known.loginFailures) await clearLoginFailures(app, subject);
    recordLogin("success", method);
    return result;
  } catch (e) {
    if (e instanceof MfaRequired && e.changePassword) throw e; // not a refusal: the page asks for it
    if (e instanceof MfaRequired) {
      recordLogin("mfa_required", method);
      await recordRefusal(app, req, args, "login.mfa_required", "mfa_required");
      throw e;
    }
    if (e instanceof TooManySessions) {
      recordLogin("rejected", method);
      await recordRefusal(app, req, args, "login.failure", "too_many_sessions");
      throw e;
    }
    if (e instanceof SecondFactorLocked) {
      // Not one more failure: no code was checked (a lock refuses before any code is).
      recordLogin("throttled", method);
      await recordRefusal(app, req, args, "login.throttled", "throttled");
      throw e;
    }
    if (isInfrastructureFailure(e)) {
      recordLogin("error", method);
      const cause = describeCause(e); // never a query's parameters
      app.log.error("login unavailable", { login: req.login, code: cause.code, error: cause.message });
      throw e instanceof ServiceUnavailable
        ? e
        : new ServiceUnavailable("tokens", "The service cannot log in now; try again later");
    }
    const expected = e instanceof LoginRefused || e instanceof AuthenticationFailed;
    recordLogin(expected ? "failure" : "error", method);
    if (!expected) {
      app.log.error("login error", { login: req.login, error: describeCause(e).message });
    }
    app.log.info("login", { outcome: "failure", login: req.login, remote_addr: req.remoteAddr });
    const reason = checkingSecondFactor
      ? "mfa_invalid"
      : e instanceof LoginRefused
        ? "refused"
        : expected
          ? "invalid_credentials"
          : "error";
    await recordLoginFailure(app, req, args, subject, reason);
    throw new AuthenticationFailed();
  }
}

/** The hosted login page's cue (MfaRequired with `proven`): ask the user for a new password first. */
function passwordChangeDue(args: LoginArgs, auth: Authenticated): MfaRequired {
  const user = knownLoginUser(args, auth.login)!;
  const e = new MfaRequired([]);
  e.changePassword = true;
  e.proven = { userUuid: user.uuid, login: auth.login, method: auth.method, backendName: auth.backendName };
  return e;
}

/**
 * An upstream OpenID sign-in whose provider is trusted with its `amr` and whose verified ID token shows a
 * multi-factor authentication (services/integrations/upstream-oidc/amr.ts): the provider already asked
 * the second factor. Only the `oidc` identity provider's word counts (plugins/idp/oidc.ts sets it from
 * the server's own record of the ID token, never from the request body).
 */
const upstreamMfaMet = (args: LoginArgs, auth: Authenticated) =>
  args.upstreamMfa === true && auth.method === UPSTREAM_METHOD;
const UPSTREAM_METHOD = "oidc";

async function secondFactor(
  app: AppContext,
  args: LoginArgs,
  auth: Authenticated,
  req: LoginRequest,
): Promise<SecondFactorOutcome> {
  // The tenant's MFA requirement is met upstream: no code asked, and nothing to enrol (docs/federation.md "Multi-factor").
  if (upstreamMfaMet(args, auth)) return { enrolOnlyAcl: null };
  const proven = () => {
    const user = knownLoginUser(args, auth.login);
    return user
      ? { userUuid: user.uuid, login: auth.login, method: auth.method, backendName: auth.backendName }
      : undefined;
  };
  try {
    const outcome = await secondFactorStep(app, args, auth.login, req.body.mfa_code);
    if (outcome.enrolOnlyAcl && req.interactive) {
      const e = new MfaRequired([]);
      e.enrol = true;
      e.proven = proven();
      throw e;
    }
    return outcome;
  } catch (e) {
    if (e instanceof MfaRequired) e.proven ??= proven();
    throw e;
  }
}

/**
 * The token of a sign-in whose password the pipeline accepted earlier (MfaRequired.proven) and whose
 * second factor the hosted login page has just checked (or, passwordless, a passkey with user
 * verification): issued as single sign-on issues one (`loginAuthenticatedUser`: the user's effective
 * method and backend, ACL, metadata, session cap), its success counted and logged as a login's.
 */
export async function completeProvenLogin(
  app: AppContext,
  proven: ProvenPassword,
  req: Omit<LoginRequest, "password" | "login" | "mobile">,
): Promise<LoginResult> {
  const result = await loginAuthenticatedUser(app, { ...req, login: proven.login, userUuid: proven.userUuid });
  app.log.info("login", { outcome: "success", login: proven.login, idp: proven.method, remote_addr: req.remoteAddr });
  recordLogin("success", proven.method);
  return result;
}

/**
 * A new token for a user already authenticated in this browser (OpenID Connect single sign-on,
 * services/oidc/browser-session.ts), as a refresh-token login does (§5.3 step 1): no password, the
 * backend of the user's effective method, the same ACL, metadata and session cap as `login`. The
 * login must still name that user, enabled; otherwise AuthenticationFailed. No throttling: nothing
 * is guessed here (the browser session's cookie is a 256-bit secret).
 */
export async function loginAuthenticatedUser(
  app: AppContext,
  req: Omit<LoginRequest, "password" | "login" | "mobile"> & { login: string; userUuid: string },
): Promise<LoginResult> {
  const args: LoginArgs = {
    login: req.login,
    password: null,
    mobile: false,
    userAgent: req.userAgent,
    remoteAddr: req.remoteAddr,
    body: req.body as Record<string, unknown>,
    headers: req.headers,
    acl: [],
  };
  const user = await findUserByLogin(app.db, req.login);
  if (!user || user.uuid !== req.userUuid) throw new AuthenticationFailed();
  const method = await effectiveMethod(app.db, user.authenticationMethod, user.tenantUuid);
  const backend = backendForMethod(app, method, args);
  const auth: Authenticated = {
    backend,
    backendName: backendNameOf(app, backend),
    login: req.login,
    method,
    persistentMetadata: {},
    refreshTokenUuid: null,
    // The browser session may predate the tenant's MFA requirement: the login's rule applies (and
    // a user vouched for by an identity provider has no password to change, as in `login`).
    enrolOnlyAcl: pendingActionsAcl(
      req.mfaMetUpstream ? null : await mfaRestrictedAcl(app, user),
      vouchedByIdentityProvider([method]) ? null : user,
    ),
  };
  try {
    return await issue(app, args, auth, { ...req, password: null, mobile: false });
  } catch (e) {
    if (e instanceof LoginRefused) throw new AuthenticationFailed();
    throw e;
  }
}

/**
 * What a login attempt is counted against: its address, and the Basic login name — except for
 * refresh-token logins, which ignore Basic credentials and prove a 122-bit secret instead: they
 * count per address only, so a user's devices keep working while someone guesses the password.
 */
function throttleSubject(app: AppContext, args: LoginArgs, forwarded: boolean): ThrottleSubject {
  const viaRefreshToken = app.plugins.builtinIdp.refreshToken?.canAuthenticate(args) ?? false;
  return { action: "login", login: viaRefreshToken ? null : args.login, remoteAddr: args.remoteAddr, forwarded };
}

/** An outage (database, or a plugin's server answering 503) is not a refusal: never counted. */
function isInfrastructureFailure(e: unknown): boolean {
  return (e instanceof ApiError && e.status >= 500) || isDatabaseUnavailable(e);
}

/** Refresh token first, then configured IdPs by priority, then native (§5.3). */
async function authenticate(app: AppContext, args: LoginArgs): Promise<Authenticated> {
  const { refreshToken, native } = app.plugins.builtinIdp;
  if (refreshToken?.canAuthenticate(args)) {
    const { backend, login } = await refreshToken.verifyAuth(args);
    return {
      backend,
      backendName: backendNameOf(app, backend),
      login,
      method: refreshToken.authenticationMethod,
      persistentMetadata: (args.persistentMetadata as Record<string, unknown>) ?? {},
      refreshTokenUuid: (args.refreshTokenUuid as string) ?? null,
    };
  }
  const configured = [...app.plugins.idp.entries()]
    .sort((a, b) => a[1].priority - b[1].priority)
    .map(([name, e]) => [name, e.plugin] as const);
  for (const [name, idp] of [...configured, ["native", native] as const]) {
    if (!idp) continue;
    let accepts = false;
    try {
      accepts = idp.loaded && idp.canAuthenticate(args);
    } catch (e) {
      app.log.warn("identity provider failed in canAuthenticate; skipped", { idp: name, error: (e as Error).message });
    }
    if (!accepts) continue;
    const { backend, login } = await idp.verifyAuth(args);
    await requireMethod(app, login, idp.authenticationMethod, args);
    return {
      idp,
      backend,
      backendName: backendNameOf(app, backend),
      login,
      method: idp.authenticationMethod,
      persistentMetadata: {},
      refreshTokenUuid: null,
    };
  }
  throw new LoginRefused();
}

function backendNameOf(app: AppContext, backend: BackendPlugin): string {
  for (const [name, b] of app.plugins.backends) if (b === backend) return name;
  return "wazo_user";
}

async function requireMethod(app: AppContext, login: string, method: string, args: LoginArgs): Promise<void> {
  const user = await findLoginUser(app.db, login, args);
  if (!user) throw new LoginRefused();
  if (resolveMethod(user.authenticationMethod, user.tenantAuthenticationMethod) !== method) throw new LoginRefused();
}

/**
 * ACL of the default policy (§4.4): `backend_policies[backend]`, else `default_user_policy`, by name
 * — in the master tenant only (where config-managed policies live): a policy of the same name that
 * a tenant administrator creates in its own tenant must not reach every token of every tenant.
 */
export async function defaultPolicyAcl(app: AppContext, backendField: string): Promise<string[]> {
  const name = app.config.backend_policies[backendField] ?? app.config.default_user_policy;
  if (!name) return [];
  const rows = await app.db
    .select({ access: accesses.access })
    .from(policies)
    .innerJoin(policyAccesses, eq(policyAccesses.policyUuid, policies.uuid))
    .innerJoin(accesses, eq(accesses.id, policyAccesses.accessId))
    .where(and(eq(policies.name, name), eq(policies.tenantUuid, app.topTenantUuid)));
  return rows.map((r) => r.access);
}

async function issue(app: AppContext, args: LoginArgs, auth: Authenticated, req: LoginRequest): Promise<LoginResult> {
  const body = req.body;
  args.acl = await defaultPolicyAcl(app, body.backend ?? "wazo_user");
  const metadata = { ...auth.persistentMetadata, ...((await auth.backend.getMetadata?.(auth.login, args)) ?? {}) };
  const authId = typeof metadata.auth_id === "string" ? metadata.auth_id : null;
  if (!authId) throw new LoginRefused();
  const fullAcl =
    auth.enrolOnlyAcl ??
    withSelfService(app, metadata.purpose, (await auth.backend.getAcl?.(auth.login, args)) ?? args.acl);
  const acl = req.narrowAcl ? req.narrowAcl(fullAcl, { authId }) : fullAcl;
  const expiration = body.expiration ?? app.config.default_token_lifetime;
  const capped = isUuid(authId) && (metadata.purpose === "user" || metadata.purpose === "external_api");
  // No refresh token for an enrol-only login: it would later log in without the second factor.
  const offline = body.access_type === "offline" && Boolean(body.client_id) && isUuid(authId) && !auth.enrolOnlyAcl;
  const continued = req.continueSession;
  const write = async (tx: DbOrTx): Promise<LoginResult> => {
    // A continued session is already counted (and never resurrected: locked, it cannot end meanwhile).
    if (continued) await lockLiveSession(tx, continued, authId);
    else if (capped) await enforceSessionCap(app, tx, authId);
    let rt: RefreshTokenOutcome | null = null;
    let tokenMetadata = metadata;
    if (offline && body.client_id) {
      const persistent = (await auth.backend.getPersistentMetadata?.(auth.login, args)) ?? {};
      tokenMetadata = { ...persistent, ...metadata };
      rt = await issueRefreshToken(app, tx, {
        userUuid: authId,
        clientId: body.client_id,
        backend: auth.backendName,
        login: typeof args.real_login === "string" ? args.real_login : auth.login,
        userAgent: req.userAgent,
        remoteAddr: req.remoteAddr,
        mobile: req.mobile,
        metadata: persistent,
        tenantUuid: typeof metadata.tenant_uuid === "string" ? metadata.tenant_uuid : app.topTenantUuid,
      });
    }
    const sessionTenantUuid =
      typeof tokenMetadata.tenant_uuid === "string" ? tokenMetadata.tenant_uuid : app.topTenantUuid;
    const userUuid = isUuid(authId) ? authId : null;
    const issued = await insertToken(
      app,
      tx,
      {
        authId,
        pbxUserUuid: typeof tokenMetadata.pbx_user_uuid === "string" ? tokenMetadata.pbx_user_uuid : null,
        acl,
        metadata: tokenMetadata,
        expiration,
        userAgent: req.userAgent,
        remoteAddr: req.remoteAddr,
        sessionTenantUuid,
        mobile: req.mobile,
        refreshTokenUuid: auth.refreshTokenUuid ?? rt?.uuid ?? null,
        sessionUuid: continued,
      },
      continued
        ? undefined
        : (sessionUuid) =>
            sessionCreatedEvent({ uuid: sessionUuid, tenantUuid: sessionTenantUuid, userUuid, mobile: req.mobile }),
      (sessionUuid) => {
        // A refresh-token login is the refresh token's use (recorded by client, never by the
        // refresh token's uuid: that is the secret itself); any other is a login decision.
        const actor = { ...loginActor(req), userUuid, sessionUuid, tenantUuid: sessionTenantUuid };
        const target = { kind: "user", uuid: userUuid, tenantUuid: sessionTenantUuid };
        const entry = auth.refreshTokenUuid
          ? {
              action: "refresh_token.use",
              target,
              changes: [{ field: "client_id", old: null, new: body.client_id ?? null }],
            }
          : { action: "login.success", target };
        return [auditInsert(app, tx, actor, entry), auditOutboxInsert(app, tx, actor, entry)];
      },
    );
    await auth.idp?.onTokenIssued?.(
      args,
      {
        tokenUuid: issued.record.uuid,
        sessionUuid: issued.record.sessionUuid,
        userUuid,
        refreshTokenUuid: issued.record.refreshTokenUuid ?? null,
      },
      tx,
    );
    return {
      token: tokenJson(issued.record, { issuedAt: issued.issuedAt, expiresAt: issued.expiresAt }, rt?.uuid),
      sessionsRevoked: rt?.sessionsRevoked ?? 0,
    };
  };
  // When the session, the token and its event are the only write — one statement, atomic by
  // itself — no explicit transaction is opened: two round trips (BEGIN, COMMIT) fewer.
  return capped || offline || continued || auth.idp?.onTokenIssued ? inTransaction(app, write) : write(app.db);
}

/**
 * The session a login continues, share-locked until commit (its end, concurrent, waits, then ends the
 * new token too; concurrent refreshes of it do not wait): it must still exist and be `authId`'s;
 * otherwise the login is refused.
 */
async function lockLiveSession(tx: DbOrTx, sessionUuid: string, authId: string): Promise<void> {
  const [live] = await tx
    .select({ uuid: sessions.uuid })
    .from(sessions)
    .where(
      and(
        eq(sessions.uuid, sessionUuid),
        sql`exists (select 1 from ${tokens} where ${tokens.sessionUuid} = ${sessions.uuid} and ${tokens.authId} = ${authId})`,
      ),
    )
    .for("share");
  if (!live) throw new LoginRefused();
}

/** Advisory-lock namespace of the session cap (the outbox claimer uses the single-key 7407240). */
const SESSION_CAP_LOCK = 7407241;

/**
 * `max_user_concurrent_sessions` (§5.3 step 2), counted before any mobile clean-up. The count and
 * the insert that follows are serialised per user with a transaction-scoped advisory lock: without
 * it, concurrent logins all count 99 and all insert (on one instance or several). The lock is
 * taken only on this path (a capped login, already in its transaction) and held until commit.
 * At the cap the login is refused (429 `too-many-sessions`, wazo-auth's answer), or, with
 * `session_cap_policy: end_oldest`, the oldest sessions (by their first token) end to make room,
 * as any revocation ends them: one event each, every instance's cache told on commit.
 */
async function enforceSessionCap(app: AppContext, tx: DbOrTx, userUuid: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${SESSION_CAP_LOCK}, hashtext(${userUuid}))`);
  const [row] = await tx
    .select({ n: sql<number>`count(distinct session_uuid)::int` })
    .from(sql`auth_token`)
    .where(sql`auth_id = ${userUuid}`);
  const excess = (row?.n ?? 0) - app.config.max_user_concurrent_sessions + 1;
  if (excess <= 0) return;
  if (app.config.session_cap_policy !== "end_oldest") throw new TooManySessions(userUuid);
  await revokeSessions(app, tx, oldestSessionsOf(userUuid, excess));
}

/**
 * `auth_user_login_failed` (a Tessera addition: who tried, from where — never the password) and the
 * throttling counters, in one transaction. With throttling on, a failure that cannot be counted is a
 * 503: an uncounted guess never gets its answer.
 */
async function recordLoginFailure(
  app: AppContext,
  req: LoginRequest,
  args: LoginArgs,
  subject: ThrottleSubject,
  reason: string,
): Promise<void> {
  try {
    const action = reason === "mfa_invalid" ? "login.mfa_failed" : "login.failure";
    const entry = await loginRefusalEntry(app, req, action, reason, args);
    await inTransaction(app, async (tx) => {
      await recordAudit(app, tx, loginActor(req), entry);
      await publishEvent(app, tx, {
        name: "auth_user_login_failed",
        routingKey: "auth.logins.failed",
        // A login is raw Basic input: a NUL in it cannot be stored in jsonb (and would make a
        // refused login a 503), so it is shown as U+FFFD.
        data: {
          login: req.login?.replaceAll("\0", "\uFFFD") ?? null,
          remote_addr: req.remoteAddr,
          user_agent: req.userAgent,
        },
        tenantUuid: null,
        userUuid: null,
        aggregate: "logins",
      });
      await countFailure(app, tx, subject);
    });
  } catch (e) {
    app.log.warn("could not record a failed login", { error: (e as Error).message });
    if (app.config.login_throttling.enabled)
      throw new ServiceUnavailable("tokens", "The service cannot log in now; try again later");
  }
}

/** The actor of a login attempt: nobody known yet, from the request's origin. */
/** A refusal outside any write (throttled, second factor required, too many sessions). */
async function recordRefusal(
  app: AppContext,
  req: LoginRequest,
  args: LoginArgs,
  action: string,
  outcome: string,
): Promise<void> {
  await recordRefusalEntry(app, loginActor(req), await loginRefusalEntry(app, req, action, outcome, args));
}
