// The stock `saml` identity provider (wazo-auth's login flow, identity-provider plugins, SAML login): POST /0.1/token with
// the `saml_session_id` that POST /saml/sso returned, once the IdP's signed response reached the
// ACS, logs in the user the assertion names. A SAML session id works once. The user must belong
// to the tenant whose IdP vouched for it (or one of its sub-tenants): a tenant's IdP never speaks
// for another tenant's users.
import {
  AuthenticationFailed,
  type BackendPlugin,
  type DbOrTx,
  type IdpPlugin,
  type IssuedLogin,
  type LoginArgs,
  parseNameId,
  type PluginDependencies,
  type PluginServices,
  rememberSamlLogin,
  type SamlLoginRecord,
} from "../../src/plugins/sdk.ts";

export default class SamlIdp implements IdpPlugin {
  authenticationMethod = "saml";
  loaded = false;
  private services!: PluginServices;
  private backend!: BackendPlugin;

  load(deps: PluginDependencies): void {
    const backend = deps.backends.get("wazo_user");
    if (!backend) throw new Error("the saml IdP needs the wazo_user backend");
    this.services = deps.services;
    this.backend = backend;
    this.loaded = true;
  }

  canAuthenticate(args: LoginArgs): boolean {
    return typeof args.body.saml_session_id === "string";
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    const session = await this.services.consumeSamlLogin(String(args.body.saml_session_id));
    const nameId = parseNameId(session?.samlNameId ?? null);
    if (!session?.login || !nameId) throw new AuthenticationFailed();
    const config = await this.services.samlConfigForDomain(session.domain);
    const user = await this.services.findUserByLogin(session.login);
    if (!config || !user || !(await this.services.isSubtenant(user.tenantUuid, config.tenantUuid))) {
      throw new AuthenticationFailed();
    }
    const record: SamlLoginRecord = {
      domain: session.domain,
      login: session.login,
      nameId,
      redirectUrl: session.redirectUrl,
    };
    args.samlLogin = record;
    return { backend: this.backend, login: session.login };
  }

  /** Remembers the IdP session with the token's session, for GET /saml/logout. */
  async onTokenIssued(args: LoginArgs, issued: IssuedLogin, tx: DbOrTx): Promise<void> {
    if (args.samlLogin) await rememberSamlLogin(tx, issued.sessionUuid, args.samlLogin as SamlLoginRecord);
  }

  getBackend(_args: LoginArgs): BackendPlugin {
    return this.backend;
  }
}
