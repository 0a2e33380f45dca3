// GET /0.1/backends (wazo-auth's backend and LDAP API): the enabled backends; no authentication (service
// discovery uses it as a health check).
import { RouteGroup } from "../http/route.ts";

export function backendRoutes(): RouteGroup {
  return new RouteGroup("backends").get(
    "/backends",
    { summary: "Names of the enabled authentication backends", responses: { 200: "`{data: [name]}`" } },
    ({ c, app }) => c.json({ data: [...app.plugins.backends.keys()] }),
  );
}
