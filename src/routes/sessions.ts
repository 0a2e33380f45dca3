// Routes of sessions (owner: issue 4). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function sessionRoutes(): RouteGroup {
  return new RouteGroup("sessions");
}
