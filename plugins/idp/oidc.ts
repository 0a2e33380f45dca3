// The stock `oidc` identity provider (docs/federation.md): the users of a tenant's upstream OpenID Connect
// providers. A sign-in through the hosted login page ends, once the upstream ID token has been verified and
// the user found, in a one-time completion secret; POST /0.1/token with it as `upstream_login` logs that
// user in, through the same pipeline as every login (throttling, disabled users, the second factor). The
// secret works once, and only for a user of the provider's tenant or one of its sub-tenants: a tenant's
// provider never speaks for another tenant's users.
// Native applications that sign in at the upstream provider themselves send its ID token instead, as
// `idp_token` (with `tenant_id` or `domain_name` when several tenants use the same provider): it logs in
// the user linked to its `sub`, once (services/integrations/upstream-oidc/sign-in.ts).
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
    const given = (key: string) => typeof args.body[key] === "string" && args.body[key] !== "";
    return given("upstream_login") || given("idp_token");
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    const done =
      typeof args.body.upstream_login === "string"
        ? await this.services.consumeUpstreamLogin(args.body.upstream_login)
        : await this.services.verifyUpstreamIdToken(
            String(args.body.idp_token),
            await this.services.findLoginTenant(args.body),
          );
    if (!done) throw new AuthenticationFailed();
    const user = await this.services.findLoginUser(done.login, args);
    if (
      !user ||
      user.uuid !== done.userUuid ||
      !(await this.services.isSubtenant(user.tenantUuid, done.providerTenantUuid))
    )
      throw new AuthenticationFailed();
    args.upstreamProvider = done.providerUuid;
    // The provider is trusted with its `amr`, and the ID token it signed shows a multi-factor authentication.
    args.upstreamMfa = done.upstreamMfa;
    return { backend: this.backend, login: done.login };
  }

  getBackend(_args: LoginArgs): BackendPlugin {
    return this.backend;
  }
}
