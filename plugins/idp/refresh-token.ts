// The `refresh_token` identity provider (wazo-auth's login flow step 1): a body with
// `refresh_token` and `client_id` logs the refresh token's user in again, with the backend of the
// user's effective authentication method. It is tried before every other IdP.
import type { BackendPlugin, IdpPlugin, LoginArgs, PluginDependencies } from "../../src/plugins/types.ts";
import { AuthenticationFailed } from "../../src/domain/errors.ts";
import type { AppContext } from "../../src/boot/context.ts";
import { findRefreshTokenLogin } from "../../src/services/auth/refresh-tokens.ts";
import { backendForMethod } from "../../src/services/auth/identity-providers.ts";

export default class RefreshTokenIdp implements IdpPlugin {
  authenticationMethod = "refresh_token";
  loaded = false;
  private app!: AppContext;

  load(deps: PluginDependencies): void {
    this.app = deps.app;
    this.loaded = true;
  }

  canAuthenticate(args: LoginArgs): boolean {
    return typeof args.body.refresh_token === "string" && typeof args.body.client_id === "string";
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    const found = await findRefreshTokenLogin(
      this.app,
      String(args.body.refresh_token),
      String(args.body.client_id),
      args,
    );
    if (!found) throw new AuthenticationFailed();
    args.persistentMetadata = found.metadata;
    args.refreshTokenUuid = found.uuid;
    return { backend: backendForMethod(this.app, found.method, args), login: found.login };
  }

  getBackend(args: LoginArgs): BackendPlugin {
    return backendForMethod(this.app, "native", args);
  }
}
