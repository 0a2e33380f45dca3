// A real upstream OpenID provider for the tests: panva's oidc-provider 9 (the OpenID-certified provider;
// it runs under Node, not Bun) in a child `node` process on a free loopback port
// (upstream-oidc-server.mjs). Clients are registered at it by dynamic registration (RFC 7591), as an
// administrator registers Tessera at Entra ID or Google; `set` chooses the account the next sign-in
// answers for and a tampering mode for the next ID tokens.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { apiCall, mergeCookies } from "./oidc.ts";

export type Tamper = "iss" | "aud" | "nonce" | "exp" | "azp" | "signature" | null;

export interface UpstreamAccount {
  email?: string;
  email_verified?: boolean;
  preferred_username?: string;
  given_name?: string;
  family_name?: string;
  /** OIDC Core §5.1 (released with the `profile` scope). */
  locale?: string;
  /** A provider's own claim (released with `profile`), for claim mappings that name another claim. */
  ui_language?: string;
  /** With `github`: the account as GitHub's REST API describes it (`/user`, `/user/emails`). */
  id?: number;
  login?: string;
  name?: string;
  emails?: Array<{ email: string; primary?: boolean; verified?: boolean; visibility?: "public" | "private" | null }>;
}

export interface UpstreamOptions {
  accounts?: Record<string, UpstreamAccount>;
  /**
   * Entra ID's form: the issuer is `{origin}/{tid}/v2.0`, every ID token carries `tid`, and
   * `{origin}/common/v2.0` (the multi-tenant issuer, `commonIssuer`) serves a discovery document
   * announcing the template issuer `{origin}/{tenantid}/v2.0`.
   */
  tid?: string;
  /**
   * GitHub Enterprise Server's form at the origin (`issuer` is then its base URL): plain OAuth 2.0 at
   * `/login/oauth/authorize` and `/login/oauth/access_token`, `/api/v3/user` and `/api/v3/user/emails`.
   */
  github?: boolean;
  /** oidc-provider features to turn on besides registration (e.g. `backchannelLogout`, `rpInitiatedLogout`). */
  features?: Record<string, unknown>;
}

export interface UpstreamOidc {
  issuer: string;
  /** With `tid`: the multi-tenant issuer, `{origin}/common/v2.0`. */
  commonIssuer: string;
  /** Registers a confidential client with these redirect URIs (RFC 7591). */
  register(
    redirectUris: string[],
    metadata?: Record<string, unknown>,
  ): Promise<{ client_id: string; client_secret: string }>;
  /** A logout token with these claims, signed with the provider's key (or, `stranger`, another one). */
  logoutToken(claims: Record<string, unknown>, stranger?: boolean): Promise<string>;
  /** The provider's origin (its control endpoints, and where its cookies belong). */
  origin: string;
  /** The account the next sign-ins answer for, and how their ID tokens are made wrong (null: not). */
  set(control: {
    account?: string;
    tamper?: Tamper;
    accounts?: Record<string, UpstreamAccount>;
    /** The `amr` (RFC 8176) of the next logins' ID tokens; null: none. */
    amr?: string[] | null;
  }): Promise<void>;
  /**
   * An ID token for `client` as a native application gets one: the code flow (PKCE) run against the
   * upstream by a browser without JavaScript, the code exchanged at its token endpoint as is (so a
   * tampered token comes back as the provider made it).
   */
  idToken(client: { client_id: string; client_secret: string }, redirectUri: string): Promise<string>;
  /** The parameters of the last authorization request the provider received (null: none yet). */
  lastAuthorization(): Promise<Record<string, string> | null>;
  stop(): Promise<void>;
}

const SERVER = fileURLToPath(new URL("./upstream-oidc-server.mjs", import.meta.url));

export async function startUpstreamOidc(options: UpstreamOptions = {}): Promise<UpstreamOidc> {
  const child: ChildProcess = spawn("node", [SERVER, JSON.stringify(options)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let errors = "";
  child.stderr!.on("data", (d) => {
    errors += String(d);
  });
  const { issuer, origin } = await new Promise<{ issuer: string; origin: string }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += String(d);
      const line = out.split("\n")[0];
      if (out.includes("\n")) {
        try {
          resolve(JSON.parse(line!));
        } catch (e) {
          reject(e);
        }
      }
    });
    child.on("exit", (code) => reject(new Error(`upstream provider exited (${code}): ${errors}`)));
  });
  return {
    issuer,
    commonIssuer: `${origin}/common/v2.0`,
    origin,
    async register(redirectUris, metadata = {}) {
      const res = await fetch(`${issuer}/reg`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ redirect_uris: redirectUris, client_name: "Tessera", ...metadata }),
      });
      if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { client_id: string; client_secret: string };
      return { client_id: body.client_id, client_secret: body.client_secret };
    },
    async logoutToken(claims, stranger = false) {
      const res = await fetch(`${origin}/control/logout-token`, {
        method: "POST",
        body: JSON.stringify({ claims, stranger }),
      });
      if (res.status !== 200) throw new Error(`logout token: ${res.status}`);
      return res.text();
    },
    async set(control) {
      const res = await fetch(`${origin}/control`, { method: "POST", body: JSON.stringify(control) });
      if (res.status !== 204) throw new Error(`control: ${res.status}`);
    },
    async idToken(client, redirectUri) {
      const verifier = randomBytes(32).toString("base64url");
      const auth = new URL(`${issuer}/auth`);
      const query = {
        client_id: client.client_id,
        response_type: "code",
        scope: "openid",
        redirect_uri: redirectUri,
        state: randomBytes(8).toString("hex"),
        nonce: randomBytes(8).toString("hex"),
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
      };
      for (const [k, v] of Object.entries(query)) auth.searchParams.set(k, v);
      let cookie = "";
      let at = auth.href;
      for (let hops = 0; hops < 10; hops++) {
        const res = await fetch(at, { redirect: "manual", headers: cookie ? { Cookie: cookie } : {} });
        cookie = mergeCookies(cookie, res);
        const next = new URL(res.headers.get("location") ?? "", at);
        if (!res.headers.get("location")) throw new Error(`upstream answered ${res.status}: ${await res.text()}`);
        if (next.href.startsWith(redirectUri)) {
          const code = next.searchParams.get("code");
          if (!code) throw new Error(`no code: ${next.href}`);
          const token = await fetch(`${issuer}/token`, {
            method: "POST",
            headers: {
              "Content-Type": "application/x-www-form-urlencoded",
              Authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64")}`,
            },
            body: new URLSearchParams({
              grant_type: "authorization_code",
              code,
              redirect_uri: redirectUri,
              code_verifier: verifier,
            }),
          });
          const body = (await token.json()) as { id_token?: string };
          if (!body.id_token) throw new Error(`no ID token: ${JSON.stringify(body)}`);
          return body.id_token;
        }
        at = next.href;
      }
      throw new Error("too many redirects at the upstream");
    },
    async lastAuthorization() {
      const res = await fetch(`${origin}/control/last-authorization`);
      if (res.status !== 200) throw new Error(`last authorization: ${res.status}`);
      return (await res.json()) as Record<string, string> | null;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * A provider of the token's tenant at `up`, as an administrator adds one: created through the REST API
 * over HTTP (so its `redirect_uri` names the served address), registered at the upstream with that
 * redirect URI (`registration`: extra client metadata), then given the credentials the upstream issued.
 * Returns its uuid and the client secret the upstream issued.
 */
export async function addUpstreamProvider(
  baseUrl: string,
  token: string,
  up: UpstreamOidc,
  fields: Record<string, unknown>,
  registration: Record<string, unknown> = {},
): Promise<{ uuid: string; clientSecret: string; json: Record<string, unknown> }> {
  const api = (method: string, path: string, body: unknown) => apiCall(baseUrl, method, path, token, body);
  const made = await api("POST", "/0.1/backends/oidc", { ...fields, client_id: "pending", client_secret: "pending" });
  if (made.status !== 201) throw new Error(`create: ${made.status} ${made.text}`);
  const creds = await up.register([made.json.redirect_uri], registration);
  const put = await api("PUT", `/0.1/backends/oidc/${made.json.uuid}`, { ...fields, ...creds });
  if (put.status !== 204) throw new Error(`update: ${put.status} ${put.text}`);
  return { uuid: made.json.uuid, clientSecret: creds.client_secret, json: made.json };
}
