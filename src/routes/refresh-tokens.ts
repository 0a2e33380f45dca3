// Routes of tokens (owner: issue 4). Placeholder until that issue lands.
import { RouteGroup } from "../http/route.ts";

export function refreshTokenRoutes(): RouteGroup {
  return new RouteGroup("tokens");
}
