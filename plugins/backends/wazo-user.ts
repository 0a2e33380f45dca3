// The `wazo_user` backend (wazo-auth's backends): native password check, ACL from the user's
// policies (directly and through groups), metadata from the metadata plugins of its purpose.
import type { BackendPlugin, LoginArgs, PluginDependencies } from "../../src/plugins/types.ts";
import { findLoginUser, userAcl, userMetadata, checkUserPassword } from "../../src/services/auth/user-auth.ts";
import type { AppContext } from "../../src/boot/context.ts";

export default class WazoUserBackend implements BackendPlugin {
  private app!: AppContext;

  load(deps: PluginDependencies): void {
    this.app = deps.app;
  }

  async verifyPassword(login: string, password: string, args: LoginArgs): Promise<boolean> {
    return checkUserPassword(this.app, login, password, args);
  }

  async getAcl(login: string, args: LoginArgs): Promise<string[]> {
    const user = await findLoginUser(this.app.db, login, args);
    return [...args.acl, ...(user ? await userAcl(this.app.db, user.uuid) : [])];
  }

  async getMetadata(login: string, args: LoginArgs): Promise<Record<string, unknown>> {
    return userMetadata(this.app, login, args);
  }

  async getPersistentMetadata(_login: string, _args: LoginArgs): Promise<Record<string, unknown>> {
    return {};
  }
}
