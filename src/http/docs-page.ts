// The API reference page: Swagger UI (the swagger-ui-dist package, served by this service — no CDN)
// rendering GET /0.1/api/api.yml. Asset files come from node_modules, or from the executable in a
// single-file build.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { embedded } from "../boot/embedded.ts";

export const DOCS_ASSETS = {
  "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "init.js": "application/javascript; charset=utf-8",
} as const;
export type DocsAsset = keyof typeof DOCS_ASSETS;

// Relative URLs, so the page works behind a prefix (`X-Script-Name`) as well.
const INIT = `window.ui = SwaggerUIBundle({
  url: "api.yml",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  docExpansion: "none",
  defaultModelsExpandDepth: -1,
});
`;

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tessera API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

const cache = new Map<DocsAsset, string>();

export function docsAsset(name: DocsAsset): string {
  let text = cache.get(name);
  if (text === undefined) {
    text =
      name === "init.js"
        ? INIT
        : (embedded?.files[`swagger-ui-dist/${name}`] ??
          readFileSync(createRequire(import.meta.url).resolve(`swagger-ui-dist/${name}`), "utf8"));
    cache.set(name, text);
  }
  return text;
}
