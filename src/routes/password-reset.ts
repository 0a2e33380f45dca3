// Routes of reset (owner: issue 6). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function passwordResetRoutes(): RouteGroup {
  return new RouteGroup("reset");
}
