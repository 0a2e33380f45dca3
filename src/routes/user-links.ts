// Routes of users (owner: issue 3). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function userLinkRoutes(): RouteGroup {
  return new RouteGroup("users");
}
