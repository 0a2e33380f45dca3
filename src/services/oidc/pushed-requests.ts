// Pushed authorization requests (RFC 9126): the client posts its authorization request to the
// provider first (authenticated, checked as the authorization endpoint checks it) and sends the
// browser with only `client_id` and the `request_uri` it got back. The request_uri is bound to its
// client, short-lived until a browser opens it, and used once: it goes when the code is issued.
import { createHash, randomBytes } from "node:crypto";
import { and, eq, gt, lt } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oidcPushedRequests } from "../../db/schema.ts";

/** RFC 9126 §2.2: the URN prefix of the request_uri values this provider issues. */
export const REQUEST_URI_PREFIX = "urn:ietf:params:oauth:request_uri:";
/** RFC 9126 §2.2 `expires_in`: seconds for the client to send the browser (the RFC suggests 5 to 600). */
export const PUSHED_REQUEST_LIFETIME = 90;
/** Once a browser opened it, the time a user has to sign in and consent. */
export const OPENED_REQUEST_LIFETIME = 900;

const hashUri = (uri: string) => createHash("sha256").update(uri).digest("hex");

/** Keeps a checked request (RFC 9126 §2.1) under a new request_uri, bound to its client. */
export async function storePushedRequest(
  app: AppContext,
  clientId: string,
  params: Record<string, string>,
): Promise<{ request_uri: string; expires_in: number }> {
  const uri = `${REQUEST_URI_PREFIX}${randomBytes(32).toString("base64url")}`;
  const now = Date.now();
  // Requests never opened go with the next push (bounded by the clients' own pace).
  await app.db.delete(oidcPushedRequests).where(lt(oidcPushedRequests.expiresAt, new Date(now)));
  await app.db.insert(oidcPushedRequests).values({
    uriHash: hashUri(uri),
    clientId,
    params,
    expiresAt: new Date(now + PUSHED_REQUEST_LIFETIME * 1000),
  });
  return { request_uri: uri, expires_in: PUSHED_REQUEST_LIFETIME };
}

/**
 * The parameters pushed under `uri` by `clientId` (RFC 9126 §4: bound to its client), or null when
 * unknown, another client's, expired or already used. The first opening gives the user time to
 * sign in.
 */
export async function openPushedRequest(
  app: AppContext,
  clientId: string,
  uri: string,
): Promise<Record<string, string> | null> {
  if (!uri.startsWith(REQUEST_URI_PREFIX)) return null;
  const where = and(
    eq(oidcPushedRequests.uriHash, hashUri(uri)),
    eq(oidcPushedRequests.clientId, clientId),
    gt(oidcPushedRequests.expiresAt, new Date()),
  );
  const [row] = await app.db.select().from(oidcPushedRequests).where(where);
  if (!row) return null;
  if (!row.opened)
    await app.db
      .update(oidcPushedRequests)
      .set({ opened: true, expiresAt: new Date(Date.now() + OPENED_REQUEST_LIFETIME * 1000) })
      .where(and(where, eq(oidcPushedRequests.opened, false)));
  return row.params;
}

/** Spends the request_uri as its code is issued; false when it was spent meanwhile (single use, RFC 9126 §4). */
export async function consumePushedRequest(app: AppContext, clientId: string, uri: string): Promise<boolean> {
  const gone = await app.db
    .delete(oidcPushedRequests)
    .where(and(eq(oidcPushedRequests.uriHash, hashUri(uri)), eq(oidcPushedRequests.clientId, clientId)))
    .returning({ uriHash: oidcPushedRequests.uriHash });
  return gone.length > 0;
}

/** The cleanup job's purge (boot/jobs.ts): pushed requests past their lifetime, opened or not. */
export async function purgeExpiredPushedRequests(app: AppContext): Promise<number> {
  const gone = await app.db
    .delete(oidcPushedRequests)
    .where(lt(oidcPushedRequests.expiresAt, new Date()))
    .returning({ uriHash: oidcPushedRequests.uriHash });
  return gone.length;
}
