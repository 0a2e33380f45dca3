// The stored sessions of `tessera login` (session.ts): per Tessera URL, a token and its refresh
// token in a file readable by the user alone; a token is refreshed (and stored again) once expired.
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { TesseraError, type TesseraClient } from "../../clients/typescript/index.ts";
import { CliFailure, EXIT } from "./output.ts";

/** The refresh token's client_id (one family per user: a new `tessera login` replaces the previous one). */
export const CLI_CLIENT_ID = "tessera-cli";

export interface StoredSession {
  token: string;
  expires_at: string;
  refresh_token: string | null;
  user_uuid: string;
}

/** `$TESSERA_CLI_SESSIONS`, else `$XDG_CONFIG_HOME/tessera/sessions.json` (XDG Base Directory), else ~/.config/… */
export function sessionsFile(): string {
  if (process.env.TESSERA_CLI_SESSIONS) return process.env.TESSERA_CLI_SESSIONS;
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "tessera", "sessions.json");
}

export const sessionKey = (url: string) => url.replace(/\/+$/, "");

export function readSessions(): Record<string, StoredSession> {
  try {
    const parsed = JSON.parse(readFileSync(sessionsFile(), "utf8"));
    return parsed && typeof parsed === "object" ? parsed : {};
  } catch {
    return {}; // absent (never logged in) or unreadable: no stored session
  }
}

function writeSessions(all: Record<string, StoredSession>): void {
  const file = sessionsFile();
  if (Object.keys(all).length === 0) {
    rmSync(file, { force: true });
    return;
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // writeFileSync's mode applies only to a new file
}

export function storeSession(url: string, session: StoredSession | null): void {
  const all = readSessions();
  if (session) all[sessionKey(url)] = session;
  else delete all[sessionKey(url)];
  writeSessions(all);
}

/** A token from the stored session for `url`, refreshed (and stored again) once expired; null without one. */
export async function storedToken(client: TesseraClient, url: string): Promise<string | null> {
  const session = readSessions()[sessionKey(url)];
  if (!session) return null;
  // A margin, so a token does not expire between this check and the command's last request.
  if (utcTime(session.expires_at) - 30_000 > Date.now()) return session.token;
  if (!session.refresh_token) throw expired(url);
  try {
    const fresh = await client.refresh({ refreshToken: session.refresh_token, clientId: CLI_CLIENT_ID });
    storeSession(url, { ...session, token: fresh.token, expires_at: fresh.utc_expires_at ?? fresh.expires_at });
    return fresh.token;
  } catch (e) {
    if (e instanceof TesseraError && e.status === 401) {
      storeSession(url, null); // revoked meanwhile (password changed, logout elsewhere): forget it
      throw expired(url);
    }
    throw e;
  }
}

/** wazo-auth's `utc_expires_at` carries no zone designator: it is UTC. */
const utcTime = (iso: string) => Date.parse(/(Z|[+-]\d\d:?\d\d)$/i.test(iso) ? iso : `${iso}Z`);

const expired = (url: string) =>
  new CliFailure(`the stored session for ${url} has ended: run \`tessera login\` again`, EXIT.refused);
