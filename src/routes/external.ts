// Routes of external (owner: issue 5). Placeholder until that issue lands.
import type { AppContext } from "../context.ts";
import { RouteGroup } from "../http/route.ts";

// Takes the app: the routes of each loaded external-auth plugin are mounted here.
export function externalRoutes(_app: AppContext): RouteGroup {
  return new RouteGroup("external");
}
