// The hosted login page of the OpenID Connect provider: server-rendered HTML (nunjucks, escaping
// on), a plain form that needs no JavaScript. The headers forbid framing (clickjacking), inline
// scripts and every resource but the page's own nonce-tagged style, and any form target but this
// page and the client's registered redirect URI (where the form's answer redirects).
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import nunjucks from "nunjucks";
import { fileURLToPath } from "node:url";
import { embeddedFile } from "../embedded.ts";

const env = new nunjucks.Environment(null, { autoescape: true, throwOnUndefined: false });
let template: nunjucks.Template | null = null;

function pageTemplate(): nunjucks.Template {
  // From the executable in a single-file build (scripts/build.ts carries templates/), else from disk.
  const path = fileURLToPath(new URL("../../templates/oidc_page.html", import.meta.url));
  template ??= nunjucks.compile(embeddedFile(path) ?? readFileSync(path, "utf8"), env);
  return template;
}

export interface PageContent {
  fatal?: boolean;
  message?: string;
  clientName?: string;
  username?: string;
  hidden?: Record<string, string>;
  /** Where the form's answer may redirect (CSP form-action). */
  redirectUri?: string;
}

export function renderLoginPage(page: PageContent, status: number): Response {
  const nonce = randomBytes(16).toString("base64");
  const html = pageTemplate().render({
    fatal: page.fatal ?? false,
    message: page.message ?? "",
    client_name: page.clientName ?? "",
    username: page.username ?? "",
    hidden: page.hidden ?? {},
    style_nonce: nonce,
  });
  const formAction = ["'self'", ...(page.redirectUri ? [cspSource(page.redirectUri)] : [])].join(" ");
  return new Response(html, {
    status,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": `default-src 'none'; style-src 'nonce-${nonce}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      "X-Frame-Options": "DENY",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
    },
  });
}

/** A CSP source for a redirect URI: the URI itself for http(s), its scheme for a native app's (RFC 8252 §7.1). */
function cspSource(uri: string): string {
  const url = new URL(uri);
  if (url.protocol === "https:" || url.protocol === "http:")
    return `${url.origin}${url.pathname}`.replace(/[;,\s]/g, encodeURIComponent);
  return url.protocol;
}
