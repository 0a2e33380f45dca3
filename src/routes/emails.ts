// Routes of emails (owner: issue 6). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function emailRoutes(): RouteGroup {
  return new RouteGroup("emails");
}
