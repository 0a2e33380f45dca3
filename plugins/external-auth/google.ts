// Stock external-auth plugin `google` (wazo-auth's external-auth plugins). URLs and scope come from the
// `google:` section of the configuration.
import { OAuth2ProviderPlugin, type ProviderConfig } from "./oauth2-provider.ts";

export default class GooglePlugin extends OAuth2ProviderPlugin {
  constructor(config: Partial<ProviderConfig>) {
    super({
      authorization_base_url: config.authorization_base_url ?? "https://accounts.google.com/o/oauth2/v2/auth",
      token_url: config.token_url ?? "https://oauth2.googleapis.com/token",
      scope: config.scope ?? [
        "https://www.googleapis.com/auth/userinfo.profile",
        "https://www.googleapis.com/auth/contacts.readonly",
      ],
      authorization_params: { access_type: "offline", prompt: "consent", ...(config.authorization_params ?? {}) },
    });
  }
}
