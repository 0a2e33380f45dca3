// The `wazo_user` backend (wazo-auth's backends): native password check, ACL from the user's
// policies (directly and through groups), metadata from the metadata plugins of its purpose.
import type { BackendPlugin, LoginArgs, PluginDependencies, PluginServices } from "../../src/plugins/sdk.ts";

export default class WazoUserBackend implements BackendPlugin {
  private services!: PluginServices;

  load(deps: PluginDependencies): void {
    this.services = deps.services;
  }

  async verifyPassword(login: string, password: string, args: LoginArgs): Promise<boolean> {
    return this.services.checkUserPassword(login, password, args);
  }

  async getAcl(login: string, args: LoginArgs): Promise<string[]> {
    const user = await this.services.findLoginUser(login, args);
    return [...args.acl, ...(user ? await this.services.userAcl(user.uuid) : [])];
  }

  async getMetadata(login: string, args: LoginArgs): Promise<Record<string, unknown>> {
    return this.services.userMetadata(login, args);
  }

  async getPersistentMetadata(_login: string, _args: LoginArgs): Promise<Record<string, unknown>> {
    return {};
  }
}
