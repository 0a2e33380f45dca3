// The SAML login of wazo-auth's SAML login and logout: POST /saml/sso starts it (a signed AuthnRequest in
// the IdP's URL), the IdP posts its signed answer to POST /saml/acs, and POST /token with the
// saml_session_id then issues the token (plugins/idp/saml.ts).
import type { AppContext } from "../../../boot/context.ts";
import { ApiError, InvalidData, NotFound } from "../../../domain/errors.ts";
import { samlConfigForDomain } from "./saml-config.ts";
import { SingleRequestCache, samlClient } from "./saml-client.ts";
import {
  completeLogin,
  deleteSamlSession,
  insertSamlSession,
  loginRelayState,
  newSessionId,
  pendingLoginByRelayState,
} from "./saml-sessions.ts";
import { spKeyPair } from "./sp-key.ts";

/** Where the browser is sent back. An absolute http(s) URL, within `saml.allowed_redirect_origins` when set. */
export function checkRedirectUrl(app: AppContext, redirectUrl: string): void {
  let url: URL | null = null;
  try {
    url = new URL(redirectUrl);
  } catch {
    url = null;
  }
  const allowed = app.config.saml.allowed_redirect_origins.map((o) => new URL(o).origin);
  const refuse = (message: string) =>
    new InvalidData("saml", {
      redirect_url: {
        constraint_id: "redirect_url",
        constraint: allowed.length ? allowed : { schemes: ["http", "https"] },
        message,
      },
    });
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) throw refuse("Not an absolute http(s) URL.");
  if (url.username || url.password) throw refuse("A redirect URL may not carry credentials.");
  if (allowed.length && !allowed.includes(url.origin))
    throw refuse("This origin is not allowed (saml.allowed_redirect_origins).");
}

export async function startSamlLogin(
  app: AppContext,
  redirectUrl: string,
  domain: string,
): Promise<{ location: string; saml_session_id: string }> {
  checkRedirectUrl(app, redirectUrl);
  return beginSamlLogin(app, redirectUrl, domain);
}

/**
 * The login itself, for a redirect URL already known to be right (this service's own page, which
 * `saml.allowed_redirect_origins` need not list: the OpenID Connect login page's SAML step).
 */
export async function beginSamlLogin(
  app: AppContext,
  redirectUrl: string,
  domain: string,
): Promise<{ location: string; saml_session_id: string }> {
  const cfg = await samlConfigForDomain(app, domain);
  if (!cfg) throw new NotFound("saml", undefined, "No SAML configuration for this domain");
  const cache = new SingleRequestCache();
  const sessionId = newSessionId();
  const relayState = loginRelayState(sessionId);
  const location = await (await samlClient(app, cfg, await spKeyPair(app), cache)).getAuthorizeUrlAsync(
    relayState,
    undefined,
    {},
  );
  if (!cache.generatedId)
    throw new ApiError(500, "configuration-error", "SAML client for domain not found or failed", "saml", { domain });
  await insertSamlSession(app, {
    requestId: cache.generatedId,
    sessionId,
    redirectUrl,
    domain: cfg.domain,
    relayState,
    startTime: new Date(),
  });
  return { location, saml_session_id: sessionId };
}

/** `redirect_url` with `name=value` added to its query. */
export function withQuery(redirectUrl: string, name: string, value: string): string {
  const url = new URL(redirectUrl);
  url.searchParams.set(name, value);
  return url.toString();
}

/**
 * POST /saml/acs: checks the IdP's response and records the login on the SAML session. Returns
 * where to send the browser: the redirect_url, or it with `login_failure_code` when refused.
 */
export async function acceptSamlResponse(app: AppContext, samlResponse: string, relayState: string): Promise<string> {
  // The assertion's checks and their XML libraries load with the first SAML response (issue 28).
  const { checkAssertionContext, loginOf, nameIdOf } = await import("./assertion.ts");
  const session = await pendingLoginByRelayState(app, relayState);
  if (!session) throw new NotFound("saml", undefined, "Context not found");
  const refuse = async (reason: string, detail?: string) => {
    app.log.info("SAML response refused", { domain: session.domain, reason, detail });
    await deleteSamlSession(app, session);
    return withQuery(session.redirectUrl, "login_failure_code", "500");
  };
  const age = Date.now() - (session.startTime?.getTime() ?? 0);
  if (age > app.config.saml.saml_login_timeout_seconds * 1000) return refuse("login timed out");
  const cfg = await samlConfigForDomain(app, session.domain);
  if (!cfg) return refuse("no SAML configuration for the domain");
  let login: string;
  let nameId;
  try {
    const client = await samlClient(
      app,
      cfg,
      await spKeyPair(app),
      new SingleRequestCache(session.requestId, session.startTime ?? new Date(0)),
    );
    const { profile } = await client.validatePostResponseAsync({ SAMLResponse: samlResponse });
    if (!profile) return refuse("no assertion");
    checkAssertionContext(profile, cfg, session.requestId);
    const found = loginOf(profile);
    if (!found) return refuse("no name attribute in the assertion");
    login = found;
    nameId = nameIdOf(profile);
  } catch (e) {
    return refuse("invalid response", (e as Error).message);
  }
  if (!(await completeLogin(app, session, login, nameId))) return refuse("response already used");
  app.log.info("SAML login accepted", { domain: session.domain, login });
  return session.redirectUrl;
}
