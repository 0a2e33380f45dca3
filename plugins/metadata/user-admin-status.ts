// Stock metadata plugin `user_admin_status` (off by default; add it per purpose with
// `purpose_metadata_mapping`): `admin: true` when the user holds the policy
// `wazo_default_admin_policy` or belongs to the group `wazo_default_admin_group`.
import {
  type LoginArgs,
  loginUser,
  type MetadataPlugin,
  type PluginDependencies,
  type PluginServices,
} from "../../src/plugins/sdk.ts";

export default class UserAdminStatus implements MetadataPlugin {
  private services!: PluginServices;

  load(deps: PluginDependencies): void {
    this.services = deps.services;
  }

  async getTokenMetadata(_login: string, args: LoginArgs): Promise<Record<string, unknown>> {
    const user = loginUser(args);
    const admin = user
      ? await this.services.hasPolicyOrGroupSlug(user.uuid, "wazo_default_admin_policy", "wazo_default_admin_group")
      : false;
    return { admin };
  }
}
