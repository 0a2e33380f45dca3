// Loads the email notification plugins (default: the stock `smtp`) and checks that the one named
// by `email_notification_plugin` is there. Each plugin's constructor gets `{config, formatter}`.
import type { AppContext } from "../boot/context.ts";
import {
  emailStatus,
  missingTemplates,
  senderAddress,
  templateFormatter,
} from "../services/integrations/notifications.ts";
import type { EmailNotificationPlugin, EmailPluginConfig } from "./email-types.ts";
import { loadKind } from "./loader.ts";

export async function loadEmailPlugin(app: AppContext): Promise<void> {
  for (const warning of missingTemplates(app.config)) app.log.warn(warning);
  const pluginConfig: EmailPluginConfig = {
    // The senders resolved (their default comes from public_url), so every plugin sees an address.
    config: {
      ...(app.config as unknown as Record<string, unknown>),
      email_confirmation_from_address: senderAddress(app.config, "email_confirmation"),
      password_reset_from_address: senderAddress(app.config, "password_reset"),
    },
    formatter: templateFormatter(app.config),
  };
  app.statusProviders.push({ name: "email", status: async () => emailStatus(app) });
  for (const { name, instance } of await loadKind(
    app,
    app.plugins,
    "email_notification",
    pluginConfig as unknown as Record<string, unknown>,
  )) {
    app.plugins.email.set(name, instance as EmailNotificationPlugin);
  }
  if (!app.plugins.email.has(app.config.email_notification_plugin)) {
    app.log.error("the email notification plugin is not loaded: emails cannot be sent", {
      plugin: app.config.email_notification_plugin,
    });
  }
}
