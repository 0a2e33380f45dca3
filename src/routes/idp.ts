// Routes of idp (owner: issue 4). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function idpRoutes(): RouteGroup {
  return new RouteGroup("idp");
}
