// Routes of policies (owner: issue 3). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function policyRoutes(): RouteGroup {
  return new RouteGroup("policies");
}
