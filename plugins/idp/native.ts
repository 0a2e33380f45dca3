// The `native` identity provider: Basic credentials checked by the wazo_user backend. It is the
// fallback of the login pipeline, tried after every configured IdP.
import {
  AuthenticationFailed,
  type BackendPlugin,
  type IdpPlugin,
  type LoginArgs,
  type PluginDependencies,
} from "../../src/plugins/sdk.ts";

export default class NativeIdp implements IdpPlugin {
  authenticationMethod = "native";
  loaded = false;
  private backend!: BackendPlugin;

  load(deps: PluginDependencies): void {
    const backend = deps.backends.get("wazo_user");
    if (!backend) throw new Error("the native IdP needs the wazo_user backend");
    this.backend = backend;
    this.loaded = true;
  }

  canAuthenticate(args: LoginArgs): boolean {
    return Boolean(args.login && args.password);
  }

  async verifyAuth(args: LoginArgs): Promise<{ backend: BackendPlugin; login: string }> {
    if (!args.login || !args.password || !(await this.backend.verifyPassword(args.login, args.password, args))) {
      throw new AuthenticationFailed();
    }
    return { backend: this.backend, login: args.login };
  }

  getBackend(_args: LoginArgs): BackendPlugin {
    return this.backend;
  }
}
