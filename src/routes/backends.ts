// Routes of backends (owner: issue 5). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function backendRoutes(): RouteGroup {
  return new RouteGroup("backends");
}
