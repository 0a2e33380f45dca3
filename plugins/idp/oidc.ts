// The stock `oidc` identity provider (docs/federation.md): the users of a tenant's upstream OpenID Connect
// providers. A sign-in through the hosted login page ends, once the upstream ID token has been verified and
// the user found, in a one-time completion secret; POST /0.1/token with it as `upstream_login` logs that
// user in, through the same pipeline as every login (throttling, disabled users, the second factor). The
// secret works once, and only for a user of the provider's tenant or one of its sub-tenants: a tenant's
// provider never speaks for another tenant's users.
import {
  AuthenticationFailed,
  type BackendPlugin,
  type IdpPlugin,
  type LoginArgs,
  type PluginDependencies,
  type PluginServices,
} from "../../src/plugins/sdk.ts";

export default class UpstreamOidcIdp implements IdpPlugin {
  authenticationMethod = "oidc";
  loaded = false;
  private services!: PluginServices;
  private backend!: BackendPlugin;

  load(deps: PluginDependencies): void {
    const backend = deps.backends.get("wazo_user");
    if (!backend) throw new Error("the oidc IdP needs the wazo_user backend");
    this.services = deps.services;
    this.backend = backend;
    this.loaded = true;
  }

  canAuthenticate(args: LoginArgs): boolean {
    return typeof args.body.upstream_login === "string" && args.body.upstream_login !== "";
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    const done = await this.services.consumeUpstreamLogin(String(args.body.upstream_login));
    if (!done) throw new AuthenticationFailed();
    const user = await this.services.findLoginUser(done.login, args);
    if (
      !user ||
      user.uuid !== done.userUuid ||
      !(await this.services.isSubtenant(user.tenantUuid, done.providerTenantUuid))
    )
      throw new AuthenticationFailed();
    args.upstreamProvider = done.providerUuid;
    return { backend: this.backend, login: done.login };
  }

  getBackend(_args: LoginArgs): BackendPlugin {
    return this.backend;
  }
}
