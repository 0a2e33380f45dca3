// The app served over real HTTP (Bun.serve on a free port), so a relying-party library talks to
// it as it would to a deployed provider.
import * as oidc from "openid-client";
import { createHandler } from "../../src/app.ts";
import { openDatabase } from "../../src/db/index.ts";
import { createTestApp, type TestApp } from "./app.ts";
import { startPgCluster, type PgCluster } from "./pg-cluster.ts";

export interface ServedApp {
  url: string;
  stop(): Promise<void>;
}

/** Serves the app on loopback (`port`: a chosen one, e.g. the port of a configured `public_url`). */
export function serveApp(t: TestApp, port = 0): ServedApp {
  const handle = createHandler(t.app, t.http);
  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    port,
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
  return { status: res.status, headers: res.headers, html, hidden, cookie: mergeCookies(cookie, res) };
}

/** The hidden fields of the page's first form. */
export function hiddenFieldsOf(html: string): Record<string, string> {
  const hidden: Record<string, string> = {};
  const form = html.split("</form>")[0] ?? "";
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    hidden[htmlUnescape(m[1]!)] = htmlUnescape(m[2]!);
  return hidden;
}

/** A Cookie header: `cookie` updated by the response's Set-Cookie headers (Max-Age=0 removes). */
export function mergeCookies(cookie: string, res: Response): string {
  const jar = new Map<string, string>();
  for (const pair of cookie.split("; ").filter(Boolean)) {
    const i = pair.indexOf("=");
    jar.set(pair.slice(0, i), pair.slice(i + 1));
  }
  for (const set of res.headers.getSetCookie()) {
    const [pair] = set.split(";");
    const i = pair!.indexOf("=");
    if (/max-age=0/i.test(set)) jar.delete(pair!.slice(0, i));
    else jar.set(pair!.slice(0, i), pair!.slice(i + 1));
  }
  return [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
}

/**
 * A browser without JavaScript, for the provider's pages: keeps its cookies, follows nothing by
 * itself (every answer is returned as is), posts forms as a browser posts them.
 */
export class TestBrowser {
  cookie = "";
  constructor(readonly base: string) {}

  async get(url: string): Promise<{ res: Response; html: string; location: URL | null }> {
    const res = await fetch(url, { redirect: "manual", headers: this.cookie ? { Cookie: this.cookie } : {} });
    return this.take(res);
  }

  async post(path: string, form: Record<string, string>) {
    const res = await fetch(`${this.base}${path}`, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams(form),
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...(this.cookie ? { Cookie: this.cookie } : {}) },
    });
    return this.take(res);
  }

  /**
   * Opens the authorization URL and, when the form is shown, signs in: the answer after the password.
   * A page asking the login name first (home-realm discovery) is answered, then its password step.
   */
  async signIn(url: string, username: string, password: string) {
    let shown = await this.get(url);
    if (shown.res.status === 200 && shown.html.includes('name="step" value="identifier"'))
      shown = await this.post("/0.1/oidc/authorize", { ...hiddenFieldsOf(shown.html), username });
    if (shown.res.status !== 200 || !shown.html.includes('name="password"'))
      throw new Error(`no login form: ${shown.res.status} ${shown.html.slice(0, 300)}`);
    return this.post("/0.1/oidc/authorize", { ...hiddenFieldsOf(shown.html), username, password });
  }

  /** Answers the consent page shown in `html`. */
  consent(html: string, decision: "allow" | "deny") {
    return this.post("/0.1/oidc/authorize/consent", { ...hiddenFieldsOf(html), decision });
  }

  private async take(res: Response) {
    this.cookie = mergeCookies(this.cookie, res);
    const html = await res.text();
    const loc = res.headers.get("location");
    return { res, html, location: loc ? new URL(loc, this.base) : null };
  }
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

/** openid-client over plain http (the test servers). */
export const insecure = { execute: [oidc.allowInsecureRequests] };

/** A registered confidential client as openid-client sees it (discovery, client_secret_basic). */
export function discoverClient(issuer: URL, client: { client_id: string; client_secret: string }) {
  return oidc.discovery(issuer, client.client_id, undefined, oidc.ClientSecretBasic(client.client_secret), insecure);
}

export interface StartedAuthorization {
  verifier: string;
  state: string;
  nonce: string;
  url: string;
}

/** An authorization URL as a relying party builds it: PKCE S256, state, nonce; `extra` overrides. */
export async function startAuthorization(
  config: oidc.Configuration,
  redirectUri: string,
  extra: Record<string, string> = {},
): Promise<StartedAuthorization> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: "openid profile",
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    nonce,
    ...extra,
  });
  return { verifier, state, nonce, url: url.toString() };
}

/** The device flow's verification page as a browser without JavaScript uses it: open the complete URI, then allow or deny. */
export async function answerDevicePage(
  verificationUriComplete: string,
  username: string,
  password: string,
  action: "allow" | "deny" = "allow",
): Promise<{ status: number; html: string }> {
  const page = await openLoginPage(verificationUriComplete);
  if (page.status !== 200) return { status: page.status, html: page.html };
  const res = await fetch(new URL("device", verificationUriComplete), {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams({ ...page.hidden, username, password, action }),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: page.cookie },
  });
  return { status: res.status, html: await res.text() };
}

/** An outage test's app: on a private PostgreSQL cluster the test stops and starts (1 s timeouts), served over HTTP. */
export interface ClusterApp {
  cluster: PgCluster;
  t: TestApp;
  served: ServedApp;
}

export async function startClusterApp(config: Record<string, unknown> = {}): Promise<ClusterApp> {
  const cluster = await startPgCluster();
  const t = await createTestApp("postgres", {
    database: () => openDatabase({ url: cluster.url, poolSize: 4, timeoutSeconds: 1 }),
    config: { db_timeout: 1, ...config },
  });
  return { cluster, t, served: serveApp(t) };
}

export async function stopClusterApp(app: Partial<ClusterApp>): Promise<void> {
  await app.served?.stop();
  await app.t?.close().catch(() => {});
  await app.cluster?.destroy();
}

/** A JSON request to a served app with a token: its status, text and parsed body. */
export async function apiCall(baseUrl: string, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { "X-Auth-Token": token, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // biome-ignore lint: tests read arbitrary JSON
  return { status: res.status, text, json: (text ? JSON.parse(text) : null) as any };
}

/**
 * Follows redirects as a browser does (each relative to the page that answered, across Tessera and
 * an upstream provider) from `url`, until an answer that is no redirect, or a redirect to the
 * relying party's `clientOrigin` or one `stop` accepts — returned with `location` set, not followed.
 * `visited`: every redirect seen.
 */
export async function followRedirects(
  browser: TestBrowser,
  url: string,
  opts: { clientOrigin?: string; stop?: (next: URL) => boolean } = {},
) {
  const clientOrigin = opts.clientOrigin ?? "https://rp.example.com";
  const visited: URL[] = [];
  let at = url;
  let current = await browser.get(at);
  for (let hops = 0; hops < 20; hops++) {
    const header = current.res.headers.get("location");
    if (!header || current.res.status < 300 || current.res.status >= 400)
      return { ...current, url: at, visited, stopped: false };
    const next = new URL(header, at);
    visited.push(next);
    if (next.origin === clientOrigin || opts.stop?.(next))
      return { ...current, location: next, url: at, visited, stopped: next.origin !== clientOrigin };
    at = next.href;
    current = await browser.get(at);
  }
  throw new Error("too many redirects");
}
