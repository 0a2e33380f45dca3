// GET /0.1/api/api.yml: the OpenAPI document of every mounted route (no auth).
import { stringify } from "yaml";
import { buildOpenApi } from "../http/openapi.ts";
import { RouteGroup, type RouteSpec } from "../http/route.ts";

export function apiRoutes(specs: RouteSpec[]): RouteGroup {
  const group = new RouteGroup("api");
  let cached: string | null = null;
  group.get("/api/api.yml", { summary: "This OpenAPI document (YAML)", responses: { 200: "OpenAPI 3.1 document" } }, ({ c }) => {
    const prefix = c.req.header("X-Script-Name");
    // No YAML anchors: shared schema objects are written out in full, as every client expects.
    const render = (basePath?: string) => stringify(buildOpenApi([...specs, ...group.specs], basePath), { aliasDuplicateObjects: false });
    const yaml = prefix ? render(`${prefix}/0.1`) : (cached ??= render());
    return c.body(yaml, 200, { "Content-Type": "application/x-yaml" });
  });
  return group;
}
