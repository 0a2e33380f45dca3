// Routes of tenants (owner: issue 3). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function tenantRoutes(): RouteGroup {
  return new RouteGroup("tenants");
}
