// GET /0.1/api/api.yml: the OpenAPI document of every mounted route (no auth), and
// GET /0.1/api/docs: the same document as a browsable reference page.
import { z } from "zod";
import { stringify } from "yaml";
import { DOCS_ASSETS, DOCS_HTML, docsAsset, type DocsAsset } from "../http/docs-page.ts";
import { buildOpenApi } from "../http/openapi.ts";
import { requestScriptName } from "../http/request-origin.ts";
import { RouteGroup, type RouteSpec } from "../http/route.ts";

const assetParam = z.object({ asset: z.enum(Object.keys(DOCS_ASSETS) as [DocsAsset, ...DocsAsset[]]) });

export function apiRoutes(specs: RouteSpec[]): RouteGroup {
  const group = new RouteGroup("api");
  let cached: string | null = null;
  group
    .get(
      "/api/api.yml",
      {
        operationId: "getOpenApiDocument",
        summary: "This OpenAPI document (YAML)",
        responses: {
          200: { description: "OpenAPI 3.1 document", schema: z.string(), contentType: "application/x-yaml" },
        },
      },
      ({ c, app }) => {
        // The prefix of a reverse proxy's path, believed from a trusted proxy only (http/request-origin.ts).
        const prefix = requestScriptName(c, app.config.rest_api.trusted_proxies);
        // No YAML anchors: shared schema objects are written out in full, as every client expects.
        const render = (basePath?: string) =>
          stringify(buildOpenApi([...specs, ...group.specs], basePath), { aliasDuplicateObjects: false });
        const yaml = prefix ? render(`${prefix}/0.1`) : (cached ??= render());
        return c.body(yaml, 200, { "Content-Type": "application/x-yaml" });
      },
    )
    .get(
      "/api/docs",
      {
        operationId: "getApiReferencePage",
        summary: "The API reference page (HTML)",
        responses: { 200: { description: "HTML page", schema: z.string(), contentType: "text/html" } },
      },
      ({ c }) => c.html(DOCS_HTML),
    )
    .get(
      "/api/docs/{asset}",
      {
        operationId: "getApiReferenceAsset",
        summary: "A script or style sheet of the API reference page",
        params: assetParam,
        responses: { 200: { description: "The file", schema: z.string(), contentType: "application/javascript" } },
      },
      ({ c, params }) =>
        c.body(docsAsset(params.asset), 200, {
          "Content-Type": DOCS_ASSETS[params.asset],
          "Cache-Control": "public, max-age=3600",
        }),
    );
  return group;
}
