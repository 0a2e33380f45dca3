// Everything that runs once the database is open and before requests are served: plugins, the
// startup synchronisation of policies and groups, the bootstrap user, scheduled jobs.
import type { AppContext } from "./context.ts";
import { loadBackends } from "./plugins/loader.ts";
import { bootstrapOnStartup } from "./services/bootstrap.ts";
import { startJobs } from "./jobs.ts";

export async function startServices(app: AppContext): Promise<void> {
  await loadBackends(app, app.plugins);
  await bootstrapOnStartup(app);
  startJobs(app);
}
