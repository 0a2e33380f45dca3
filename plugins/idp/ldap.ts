// The `ldap` identity provider (wazo-auth's identity-provider plugins): a login with Basic credentials and a
// `domain_name` or `tenant_id` in the body is checked by the ldap_user backend against that
// tenant's directory; the login then becomes the user's directory email.
import {
  AuthenticationFailed,
  type BackendPlugin,
  type IdpPlugin,
  type LoginArgs,
  type PluginDependencies,
} from "../../src/plugins/sdk.ts";

export default class LdapIdp implements IdpPlugin {
  authenticationMethod = "ldap";
  loaded = false;
  private backend!: BackendPlugin;

  load(deps: PluginDependencies): void {
    const backend = deps.backends.get("ldap_user");
    if (!backend) throw new Error("the ldap IdP needs the ldap_user backend");
    this.backend = backend;
    this.loaded = true;
  }

  canAuthenticate(args: LoginArgs): boolean {
    const named = (key: string) => typeof args.body[key] === "string" && args.body[key] !== "";
    return Boolean(args.login && args.password) && (named("domain_name") || named("tenant_id"));
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    if (!args.login || !args.password || !(await this.backend.verifyPassword(args.login, args.password, args))) {
      throw new AuthenticationFailed();
    }
    return { backend: this.backend, login: String(args.real_login) };
  }

  getBackend(_args: LoginArgs): BackendPlugin {
    return this.backend;
  }
}
