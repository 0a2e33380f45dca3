// Stock external-auth plugin `microsoft` (wazo-auth's external-auth plugins). URLs and scope come from the
// `microsoft:` section of the configuration.
import { OAuth2ProviderPlugin, type ProviderConfig } from "./oauth2-provider.ts";

export default class MicrosoftPlugin extends OAuth2ProviderPlugin {
  constructor(config: Partial<ProviderConfig>) {
    super({
      authorization_base_url:
        config.authorization_base_url ?? "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
      token_url: config.token_url ?? "https://login.microsoftonline.com/common/oauth2/v2.0/token",
      scope: config.scope ?? ["offline_access", "Contacts.Read"],
      authorization_params: config.authorization_params ?? {},
    });
  }
}
