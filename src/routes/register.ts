// Routes of users (owner: issue 6). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function registerRoutes(): RouteGroup {
  return new RouteGroup("users");
}
