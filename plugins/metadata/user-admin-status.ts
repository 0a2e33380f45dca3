// Stock metadata plugin `user_admin_status` (off by default; add it per purpose with
// `purpose_metadata_mapping`): `admin: true` when the user holds the policy
// `wazo_default_admin_policy` or belongs to the group `wazo_default_admin_group`.
import type { AppContext } from "../../src/boot/context.ts";
import type { LoginArgs, MetadataPlugin, PluginDependencies } from "../../src/plugins/types.ts";
import { hasPolicyOrGroupSlug, loginUser } from "../../src/services/auth/user-auth.ts";

export default class UserAdminStatus implements MetadataPlugin {
  private app!: AppContext;

  load(deps: PluginDependencies): void {
    this.app = deps.app;
  }

  async getTokenMetadata(_login: string, args: LoginArgs): Promise<Record<string, unknown>> {
    const user = loginUser(args);
    const admin = user
      ? await hasPolicyOrGroupSlug(this.app.db, user.uuid, "wazo_default_admin_policy", "wazo_default_admin_group")
      : false;
    return { admin };
  }
}
