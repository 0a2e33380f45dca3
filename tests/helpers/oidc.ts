// The app served over real HTTP (Bun.serve on a free port), so a relying-party library talks to
// it as it would to a deployed provider.
import { createHandler } from "../../src/app.ts";
import type { TestApp } from "./app.ts";

export interface ServedApp {
  url: string;
  stop(): Promise<void>;
}

export function serveApp(t: TestApp): ServedApp {
  const handle = createHandler(t.app, t.http);
  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (req) => handle(req, server),
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

const ENTITIES: Record<string, string> = { "&amp;": "&", "&quot;": '"', "&#39;": "'", "&lt;": "<", "&gt;": ">" };
const htmlUnescape = (s: string) => s.replace(/&(amp|quot|#39|lt|gt);/g, (m) => ENTITIES[m]!);

export interface LoginPage {
  status: number;
  headers: Headers;
  html: string;
  /** Hidden fields of the form (absent on an error page). */
  hidden: Record<string, string>;
  cookie: string;
}

/** GET the authorization URL as a browser would (no redirect followed). */
export async function openLoginPage(url: string, cookie = ""): Promise<LoginPage> {
  const res = await fetch(url, { redirect: "manual", headers: cookie ? { Cookie: cookie } : {} });
  const html = await res.text();
  const hidden: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    hidden[htmlUnescape(m[1]!)] = htmlUnescape(m[2]!);
  const set = res.headers.get("set-cookie");
  return { status: res.status, headers: res.headers, html, hidden, cookie: set ? set.split(";")[0]! : cookie };
}

/** POST the login form; answers the raw response (a 303 to the client, or the page again). */
export async function submitLogin(
  base: string,
  page: LoginPage,
  username: string,
  password: string,
  override: Record<string, string> = {},
): Promise<Response> {
  const form = new URLSearchParams({ ...page.hidden, username, password, ...override });
  return fetch(`${base}/0.1/oidc/authorize`, {
    method: "POST",
    redirect: "manual",
    body: form,
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: page.cookie },
  });
}

/** Signs in through the page; the URL the browser is sent back to. */
export async function browserSignIn(
  base: string,
  authorizationUrl: string,
  username: string,
  password: string,
): Promise<URL> {
  const page = await openLoginPage(authorizationUrl);
  if (page.status !== 200) throw new Error(`login page: ${page.status} ${page.html.slice(0, 200)}`);
  const res = await submitLogin(base, page, username, password);
  const location = res.headers.get("location");
  if (res.status !== 303 || !location) throw new Error(`sign-in: ${res.status}`);
  return new URL(location);
}
