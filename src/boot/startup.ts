// Everything that runs once the database is open and before requests are served: plugins, the
// startup synchronisation of policies and groups, the bootstrap user, the bus. Scheduled jobs
// (jobs.ts) start once the service answers (main.ts): none of them is needed to answer.
import type { AppContext } from "./context.ts";
import { loadBackends } from "../plugins/loader.ts";
import { loadIdentityProviders } from "../plugins/idp-loader.ts";
import { loadExternalAuthPlugins } from "../plugins/external-auth-loader.ts";
import { loadEmailPlugin } from "../plugins/email-loader.ts";
import { syncPoliciesOnStartup } from "../services/identity/policy-sync.ts";
import { adviseFirstAdministrator, bootstrapOnStartup } from "../services/identity/bootstrap.ts";
import { startBus } from "../bus/publisher.ts";
import { hashingWarnings } from "../services/auth/passwords.ts";
import { configWarnings } from "../config/warnings.ts";
import { ensureSigningKeys, prepareSigningKeys } from "../services/oidc/keys.ts";
import { syncConsoleClient } from "../services/console/client.ts";
import { startDeliveryWorker } from "../services/outbound/delivery-worker.ts";
import { registerWebhookDelivery } from "../services/webhooks/delivery.ts";

export interface StartOptions {
  /**
   * A first start's signing keys are generated while the service already answers (main.ts; the
   * JWK Set and signatures wait for them). Off by default: a caller that reads the keys' rows
   * right after the start (tests, the CLI) finds them.
   */
  keysInBackground?: boolean;
}

export async function startServices(app: AppContext, options: StartOptions = {}): Promise<void> {
  for (const warning of [...hashingWarnings(app.config), ...configWarnings(app.config)]) app.log.warn(warning);
  await loadBackends(app, app.plugins);
  await loadIdentityProviders(app);
  await loadExternalAuthPlugins(app);
  await loadEmailPlugin(app);
  await syncPoliciesOnStartup(app);
  await bootstrapOnStartup(app);
  await adviseFirstAdministrator(app);
  await (options.keysInBackground ? prepareSigningKeys(app) : ensureSigningKeys(app));
  await syncConsoleClient(app);
  await startBus(app);
  // Outbound deliveries (webhooks, back-channel logout): with or without a bus.
  registerWebhookDelivery();
  await startDeliveryWorker(app);
}
