// The stock `saml` identity provider (wazo-auth's login flow, identity-provider plugins, SAML login): POST /0.1/token with
// the `saml_session_id` that POST /saml/sso returned, once the IdP's signed response reached the
// ACS, logs in the user the assertion names. A SAML session id works once. The user must belong
// to the tenant whose IdP vouched for it (or one of its sub-tenants): a tenant's IdP never speaks
// for another tenant's users.
import type { AppContext } from "../../src/boot/context.ts";
import type { DbOrTx } from "../../src/db/index.ts";
import { AuthenticationFailed } from "../../src/domain/errors.ts";
import type { BackendPlugin, IdpPlugin, IssuedLogin, LoginArgs, PluginDependencies } from "../../src/plugins/types.ts";
import { samlConfigForDomain } from "../../src/services/integrations/saml/saml-config.ts";
import { rememberSamlLogin, type SamlLoginRecord } from "../../src/services/integrations/saml/saml-logout.ts";
import { consumeCompletedLogin, parseNameId } from "../../src/services/integrations/saml/saml-sessions.ts";
import { isSubtenant } from "../../src/services/identity/tenant-tree.ts";
import { findUserByLogin } from "../../src/services/auth/user-auth.ts";

export default class SamlIdp implements IdpPlugin {
  authenticationMethod = "saml";
  loaded = false;
  private app!: AppContext;
  private backend!: BackendPlugin;

  load(deps: PluginDependencies): void {
    const backend = deps.backends.get("wazo_user");
    if (!backend) throw new Error("the saml IdP needs the wazo_user backend");
    this.app = deps.app;
    this.backend = backend;
    this.loaded = true;
  }

  canAuthenticate(args: LoginArgs): boolean {
    return typeof args.body.saml_session_id === "string";
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    const session = await consumeCompletedLogin(this.app, String(args.body.saml_session_id));
    const nameId = parseNameId(session?.samlNameId ?? null);
    if (!session?.login || !nameId) throw new AuthenticationFailed();
    const config = await samlConfigForDomain(this.app, session.domain);
    const user = await findUserByLogin(this.app.db, session.login);
    if (
      !config ||
      !user ||
      !(await isSubtenant(this.app.db, user.tenantUuid, config.tenantUuid, this.app.topTenantUuid))
    ) {
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
