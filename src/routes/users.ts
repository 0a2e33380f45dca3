// Routes of users (owner: issue 3). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function userRoutes(): RouteGroup {
  return new RouteGroup("users");
}
