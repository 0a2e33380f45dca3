// One @node-saml/node-saml client per request, built from the tenant's configuration as stored
// now (no client cache: a configuration change applies at once, on every instance). The library
// signs our requests and verifies the IdP's signatures; Tessera writes no signature code.
import { randomBytes } from "node:crypto";
import type { CacheItem, CacheProvider, SAML, ValidateInResponseTo } from "@node-saml/node-saml";
import type { AppContext } from "../../../boot/context.ts";
import type { ResolvedSamlConfig } from "./saml-config.ts";
import type { SpKeyPair } from "./sp-key.ts";

/**
 * The request-id cache node-saml consults for InResponseTo: it accepts exactly the one request
 * id of the SAML session being answered, and remembers the id node-saml generates for a new one.
 */
export class SingleRequestCache implements CacheProvider {
  generatedId: string | null = null;
  constructor(
    private readonly expectedId: string | null = null,
    /** When the request was made: node-saml reads the value as a date (request-id expiry). */
    private readonly requestedAt: Date = new Date(),
  ) {}
  async saveAsync(key: string, value: string): Promise<CacheItem> {
    this.generatedId = key;
    return { value, createdAt: Date.now() };
  }
  async getAsync(key: string): Promise<string | null> {
    return this.expectedId !== null && key === this.expectedId ? this.requestedAt.toISOString() : null;
  }
  async removeAsync(_key: string | null): Promise<string | null> {
    return null;
  }
}

/** The SLS URL beside the ACS URL (`…/saml/acs` → `…/saml/sls`). */
export const slsUrlOf = (acsUrl: string) => acsUrl.replace(/\/saml\/acs\/?$/, "/saml/sls");

/** node-saml is loaded on first use: it is half a second of start-up for a service that may never see SAML. */
export async function samlClient(
  app: AppContext,
  cfg: ResolvedSamlConfig,
  keys: SpKeyPair,
  cache: CacheProvider,
  forMetadata = false,
): Promise<SAML> {
  const { SAML } = await import("@node-saml/node-saml");
  return new SAML({
    entryPoint: cfg.idp.ssoUrl,
    logoutUrl: cfg.idp.sloUrl ?? cfg.idp.ssoUrl,
    logoutCallbackUrl: slsUrlOf(cfg.acsUrl),
    issuer: cfg.entityId,
    callbackUrl: cfg.acsUrl,
    audience: cfg.entityId,
    idpCert: cfg.idp.certificates,
    idpIssuer: cfg.idp.entityId,
    privateKey: keys.privateKey,
    publicCert: keys.certificate,
    signatureAlgorithm: "sha256",
    digestAlgorithm: "http://www.w3.org/2001/04/xmlenc#sha256",
    // Either the Response or the Assertion must carry a valid signature (many IdPs sign only the
    // assertion); node-saml then reads only what the signature covers. The metadata asks IdPs to
    // sign assertions.
    wantAuthnResponseSigned: false,
    wantAssertionsSigned: forMetadata,
    validateInResponseTo: "always" as ValidateInResponseTo,
    cacheProvider: cache,
    requestIdExpirationPeriodMs: app.config.saml.saml_login_timeout_seconds * 1000,
    acceptedClockSkewMs: app.config.saml.accepted_clock_skew_seconds * 1000,
    identifierFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
    // A requested authentication context makes Entra ID refuse MFA and passwordless logins.
    disableRequestedAuthnContext: true,
    // auth_saml_session.request_id is varchar(40).
    generateUniqueId: () => `id-${randomBytes(16).toString("hex")}`,
  });
}

/** The SP metadata an administrator gives the IdP: entity id, ACS and SLS URLs, signing certificate. */
export async function spMetadataXml(app: AppContext, cfg: ResolvedSamlConfig, keys: SpKeyPair): Promise<string> {
  const xml = (await samlClient(app, cfg, keys, new SingleRequestCache(), true)).generateServiceProviderMetadata(
    null,
    keys.certificate,
  );
  // node-saml declares the logout endpoint with the HTTP-POST binding; GET /saml/sls is HTTP-Redirect.
  return xml.replace(
    /(<SingleLogoutService Binding=")urn:oasis:names:tc:SAML:2\.0:bindings:HTTP-POST(")/,
    "$1urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect$2",
  );
}
