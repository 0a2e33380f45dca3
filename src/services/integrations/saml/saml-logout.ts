// SAML single logout (wazo-auth's SAML login and logout): GET /saml/logout ends the token's session and
// answers the IdP's logout URL (a signed LogoutRequest); the IdP then sends the browser to
// GET /saml/sls with its signed LogoutResponse, which lands on `redirect_url?logged_out=true`.
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import type { AppContext } from "../../../boot/context.ts";
import type { DbOrTx } from "../../../db/index.ts";
import { samlLogins } from "../../../db/schema.ts";
import { inTransaction } from "../../../db/tx.ts";
import { InvalidData, NotFound } from "../../../domain/errors.ts";
import { sessionByUuid, revokeSessions } from "../../auth/sessions.ts";
import { findValidToken } from "../../auth/tokens.ts";
import { samlConfigForDomain } from "./saml-config.ts";
import { SingleRequestCache, samlClient } from "./saml-client.ts";
import {
  LOGOUT_RELAY_PREFIX,
  deleteSamlSession,
  insertSamlSession,
  newSessionId,
  parseNameId,
  pendingLogoutByRelayState,
  type SamlNameId,
} from "./saml-sessions.ts";
import { withQuery } from "./saml-login.ts";
import { spKeyPair } from "./sp-key.ts";

export interface SamlLoginRecord {
  domain: string;
  login: string;
  nameId: SamlNameId;
  redirectUrl: string;
}

/** Called in the login's transaction once the token's session exists. */
export async function rememberSamlLogin(tx: DbOrTx, sessionUuid: string, r: SamlLoginRecord): Promise<void> {
  await tx.insert(samlLogins).values({
    sessionUuid,
    domain: r.domain,
    login: r.login,
    nameId: JSON.stringify(r.nameId),
    nameIdFormat: r.nameId.format,
    sessionIndex: r.nameId.sessionIndex,
    redirectUrl: r.redirectUrl,
  });
}

export async function startSamlLogout(app: AppContext, token: string): Promise<{ location: string }> {
  const tok = await findValidToken(app, token);
  if (!tok) throw new NotFound("tokens", undefined, "No such token");
  const [record] = await app.db.select().from(samlLogins).where(eq(samlLogins.sessionUuid, tok.sessionUuid)).limit(1);
  const nameId = parseNameId(record?.nameId ?? null);
  if (!record || !nameId) throw new NotFound("saml", undefined, "Context not found");
  const cfg = await samlConfigForDomain(app, record.domain);
  const endSession = () => inTransaction(app, (tx) => revokeSessions(app, tx, sessionByUuid(tok.sessionUuid)));
  if (!cfg?.idp.sloUrl) {
    // No IdP logout endpoint (or no configuration any more): Tessera's side of the logout only.
    await endSession();
    return { location: withQuery(record.redirectUrl, "logged_out", "true") };
  }
  const cache = new SingleRequestCache();
  const relayState = `${LOGOUT_RELAY_PREFIX}${randomBytes(16).toString("base64url")}`;
  const profile = {
    issuer: cfg.idp.entityId,
    nameID: nameId.value,
    nameIDFormat: nameId.format ?? "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
    ...(nameId.sessionIndex ? { sessionIndex: nameId.sessionIndex } : {}),
    ...(nameId.nameQualifier ? { nameQualifier: nameId.nameQualifier } : {}),
    ...(nameId.spNameQualifier ? { spNameQualifier: nameId.spNameQualifier } : {}),
  };
  const location = await (await samlClient(app, cfg, await spKeyPair(app), cache)).getLogoutUrlAsync(
    profile,
    relayState,
    {},
  );
  await insertSamlSession(app, {
    requestId: cache.generatedId!,
    sessionId: newSessionId(),
    redirectUrl: record.redirectUrl,
    domain: record.domain,
    relayState,
    login: record.login,
    samlNameId: record.nameId,
    startTime: new Date(),
  });
  await endSession();
  return { location };
}

/** Signature algorithms accepted on a redirect-binding LogoutResponse (no SHA-1). */
const REDIRECT_SIG_DIGESTS: Record<string, string> = {
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256": "sha256",
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512": "sha512",
};

/** GET /saml/sls: a LogoutResponse signed by the IdP (HTTP-Redirect binding) for our request. */
export async function finishSamlLogout(
  app: AppContext,
  query: Record<string, string>,
  rawQuery: string,
): Promise<string> {
  const refused = (message: string) =>
    new InvalidData(
      "saml",
      { SAMLResponse: { constraint_id: "saml_logout_response", constraint: "signed LogoutResponse", message } },
      "SAML processing failed",
    );
  if (!query.SAMLResponse || !query.RelayState) throw refused("SAMLResponse and RelayState are required.");
  const pending = await pendingLogoutByRelayState(app, query.RelayState);
  if (!pending) throw new NotFound("saml", undefined, "Context not found");
  const cfg = await samlConfigForDomain(app, pending.domain);
  if (!cfg) throw new NotFound("saml", undefined, "Context not found");
  // node-saml accepts an unsigned redirect message; a LogoutResponse must be signed here.
  if (!query.Signature || !query.SigAlg) throw refused("The LogoutResponse is not signed.");
  const digest = REDIRECT_SIG_DIGESTS[query.SigAlg];
  if (!digest) throw refused(`Unsupported SigAlg (supported: ${Object.keys(REDIRECT_SIG_DIGESTS).join(", ")}).`);
  try {
    const client = await samlClient(
      app,
      cfg,
      await spKeyPair(app),
      new SingleRequestCache(pending.requestId, pending.startTime ?? new Date(0)),
    );
    // node-saml looks the algorithm up by the name after '#' in crypto.getHashes(), where Bun has
    // no `RSA-SHA256`: hand it the digest name (the signed query string keeps the original SigAlg).
    const { loggedOut } = await client.validateRedirectAsync({ ...query, SigAlg: `#${digest}` }, rawQuery);
    if (!loggedOut) throw new Error("not a logout response");
  } catch (e) {
    app.log.info("SAML logout response refused", { domain: pending.domain, detail: (e as Error).message });
    throw refused("The LogoutResponse was refused.");
  }
  await deleteSamlSession(app, pending);
  return withQuery(pending.redirectUrl, "logged_out", "true");
}
