// Stock metadata plugin `default_user` (wazo-auth's metadata plugins): users of purpose `user` are PBX users.
import { type LoginArgs, loginUser, type MetadataPlugin } from "../../src/plugins/sdk.ts";

export default {
  async getTokenMetadata(_login: string, args: LoginArgs) {
    return { pbx_user_uuid: loginUser(args)?.uuid ?? null, purpose: "user" };
  },
} satisfies MetadataPlugin;
