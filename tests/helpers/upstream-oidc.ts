// A real upstream OpenID provider for the tests: panva's oidc-provider 9 (the OpenID-certified provider;
// it runs under Node, not Bun) in a child `node` process on a free loopback port
// (upstream-oidc-server.mjs). Clients are registered at it by dynamic registration (RFC 7591), as an
// administrator registers Tessera at Entra ID or Google; `set` chooses the account the next sign-in
// answers for and a tampering mode for the next ID tokens.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export type Tamper = "iss" | "aud" | "nonce" | "exp" | "azp" | "signature" | null;

export interface UpstreamAccount {
  email?: string;
  email_verified?: boolean;
  preferred_username?: string;
  given_name?: string;
  family_name?: string;
}

export interface UpstreamOptions {
  accounts?: Record<string, UpstreamAccount>;
  /** An Entra-style `tid` claim in every ID token. */
  tid?: string;
  /** An Entra-style multi-tenant discovery document: it announces this template issuer. */
  templateIssuer?: string;
  /** A path after the host in the issuer (Entra's `/{tenant}/v2.0`). */
  path?: string;
}

export interface UpstreamOidc {
  issuer: string;
  /** Registers a confidential client with these redirect URIs (RFC 7591). */
  register(redirectUris: string[]): Promise<{ client_id: string; client_secret: string }>;
  /** The account the next sign-ins answer for, and how their ID tokens are made wrong (null: not). */
  set(control: { account?: string; tamper?: Tamper; accounts?: Record<string, UpstreamAccount> }): Promise<void>;
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
  const issuer = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += String(d);
      const line = out.split("\n")[0];
      if (out.includes("\n")) {
        try {
          resolve(JSON.parse(line!).issuer);
        } catch (e) {
          reject(e);
        }
      }
    });
    child.on("exit", (code) => reject(new Error(`upstream provider exited (${code}): ${errors}`)));
  });
  const origin = new URL(issuer).origin;
  return {
    issuer,
    async register(redirectUris) {
      const res = await fetch(`${issuer}/reg`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ redirect_uris: redirectUris, client_name: "Tessera" }),
      });
      if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { client_id: string; client_secret: string };
      return { client_id: body.client_id, client_secret: body.client_secret };
    },
    async set(control) {
      const res = await fetch(`${origin}/control`, { method: "POST", body: JSON.stringify(control) });
      if (res.status !== 204) throw new Error(`control: ${res.status}`);
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
