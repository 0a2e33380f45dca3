// GET /0.1/api/api.yml: the OpenAPI document of every mounted route (no auth).
import { stringify } from "yaml";
import { buildOpenApi } from "../http/openapi.ts";
import { RouteGroup, type RouteSpec } from "../http/route.ts";

export function apiRoutes(specs: RouteSpec[]): RouteGroup {
  const group = new RouteGroup("api");
  let cached: string | null = null;
  group.get("/api/api.yml", { summary: "This OpenAPI document (YAML)", responses: { 200: "OpenAPI 3.1 document" } }, ({ c }) => {
    const prefix = c.req.header("X-Script-Name");
    const yaml = prefix ? stringify(buildOpenApi([...specs, ...group.specs], `${prefix}/0.1`)) : (cached ??= stringify(buildOpenApi([...specs, ...group.specs])));
    return c.body(yaml, 200, { "Content-Type": "application/x-yaml" });
  });
  return group;
}
