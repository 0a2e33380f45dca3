// Routes of groups (owner: issue 3). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function groupRoutes(): RouteGroup {
  return new RouteGroup("groups");
}
