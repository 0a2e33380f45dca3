// The hosted pages' two scripts (issue 25), served same-origin at {issuer}/assets/ (the pages' CSP
// allows `script-src 'self'` only on a page with a passkey button, and no inline script, no CDN):
// ours (templates/passkey.js) and @simplewebauthn/browser's UMD bundle. A single-file build carries
// both (scripts/build.ts).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { embeddedFile } from "../../boot/embedded.ts";

export const PAGE_SCRIPTS = ["passkey.js", "webauthn-browser.js"] as const;
export type PageScript = (typeof PAGE_SCRIPTS)[number];

const scripts = new Map<string, string>();

function scriptSource(name: PageScript): string {
  if (name === "passkey.js") {
    const path = fileURLToPath(new URL("../../../templates/passkey.js", import.meta.url));
    return embeddedFile(path) ?? readFileSync(path, "utf8");
  }
  return (
    embeddedFile("simplewebauthn-browser/index.umd.min.js") ??
    readFileSync(
      join(
        dirname(createRequire(import.meta.url).resolve("@simplewebauthn/browser")),
        "../dist/bundle/index.umd.min.js",
      ),
      "utf8",
    )
  );
}

export function pageScript(name: PageScript): Response {
  let body = scripts.get(name);
  if (body === undefined) {
    body = scriptSource(name);
    scripts.set(name, body);
  }
  return new Response(body, {
    headers: {
      "Content-Type": "text/javascript; charset=utf-8",
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": "public, max-age=3600",
    },
  });
}
