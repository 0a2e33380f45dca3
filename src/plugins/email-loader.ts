// Loads the email notification plugins (default: the stock `smtp`) and checks that the one named
// by `email_notification_plugin` is there.
import { fileURLToPath } from "node:url";
import type { AppContext } from "../context.ts";
import { templateFormatter } from "../services/notifications.ts";
import type { EmailPluginConfig } from "./email-types.ts";
import { instantiate, loadKind, missingMembers, resolveModule } from "./loader.ts";

const STOCK_SMTP = fileURLToPath(new URL("../../plugins/email/smtp.ts", import.meta.url));

export async function loadEmailPlugin(app: AppContext): Promise<void> {
  const pluginConfig: EmailPluginConfig = { config: app.config as unknown as Record<string, unknown>, formatter: templateFormatter(app.config) };
  const configured = Object.keys(app.config.plugins.email_notification).length > 0;
  if (!configured) {
    const smtp = await instantiate(await import(resolveModule(STOCK_SMTP)), pluginConfig as unknown as Record<string, unknown>);
    app.plugins.email.set("smtp", smtp);
    app.plugins.report.push({ kind: "email_notification", name: "smtp", module: STOCK_SMTP, status: "ok" });
  } else {
    for (const { name, instance } of await loadKind(app, app.plugins, "email_notification", pluginConfig as unknown as Record<string, unknown>)) {
      if (missingMembers("email_notification", instance).length === 0) app.plugins.email.set(name, instance);
    }
  }
  if (!app.plugins.email.has(app.config.email_notification_plugin)) {
    app.log.error("the email notification plugin is not loaded: emails cannot be sent", { plugin: app.config.email_notification_plugin });
  }
}
