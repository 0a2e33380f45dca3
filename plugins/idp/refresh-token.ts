// The `refresh_token` identity provider (wazo-auth's login flow step 1): a body with
// `refresh_token` and `client_id` logs the refresh token's user in again, with the backend of the
// user's effective authentication method. It is tried before every other IdP.
import {
  AuthenticationFailed,
  type BackendPlugin,
  type IdpPlugin,
  type LoginArgs,
  type PluginDependencies,
  type PluginServices,
} from "../../src/plugins/sdk.ts";

export default class RefreshTokenIdp implements IdpPlugin {
  authenticationMethod = "refresh_token";
  loaded = false;
  private services!: PluginServices;

  load(deps: PluginDependencies): void {
    this.services = deps.services;
    this.loaded = true;
  }

  canAuthenticate(args: LoginArgs): boolean {
    return typeof args.body.refresh_token === "string" && typeof args.body.client_id === "string";
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    const found = await this.services.findRefreshTokenLogin(
      String(args.body.refresh_token),
      String(args.body.client_id),
      args,
    );
    if (!found) throw new AuthenticationFailed();
    args.persistentMetadata = found.metadata;
    args.refreshTokenUuid = found.uuid;
    return { backend: this.services.backendForMethod(found.method, args), login: found.login };
  }

  getBackend(args: LoginArgs): BackendPlugin {
    return this.services.backendForMethod("native", args);
  }
}
