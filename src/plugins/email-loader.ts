// Loads the email notification plugins (default: the stock `smtp`) and checks that the one named
// by `email_notification_plugin` is there. Each plugin's constructor gets `{config, formatter}`.
import type { AppContext } from "../boot/context.ts";
import { templateFormatter } from "../services/integrations/notifications.ts";
import type { EmailNotificationPlugin, EmailPluginConfig } from "./email-types.ts";
import { loadKind } from "./loader.ts";

export async function loadEmailPlugin(app: AppContext): Promise<void> {
  const pluginConfig: EmailPluginConfig = {
    config: app.config as unknown as Record<string, unknown>,
    formatter: templateFormatter(app.config),
  };
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
