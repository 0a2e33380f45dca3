// OAuth2 helpers for external-auth plugins (docs/plugins.md). Pending authorizations are rows of
// `tessera_oauth2_state`, so the provider's redirect may reach any instance; the callback itself
// lives in the registering instance's memory, with the plugin's `oauth2Callback` as the fallback.
import { and, eq, gt } from "drizzle-orm";
import type { AppContext } from "../../boot/context.ts";
import { oauth2States, users } from "../../db/schema.ts";
import { inTransaction } from "../../db/tx.ts";
import { NotFound } from "../../domain/errors.ts";
import { externalEvent } from "./external-auth.ts";

const STATE_TTL_MS = 10 * 60 * 1000;
type Callback = (...args: unknown[]) => Promise<void> | void;
const callbacks = new Map<string, { callback: Callback; extra: unknown[] }>();

export async function registerOAuth2Callback(
  app: AppContext,
  authType: string,
  userUuid: string,
  state: string,
  callback: Callback,
  extra: unknown[],
): Promise<void> {
  const [user] = await app.db.select({ tenantUuid: users.tenantUuid }).from(users).where(eq(users.uuid, userUuid));
  if (!user) throw new NotFound("users", userUuid);
  await app.db
    .insert(oauth2States)
    .values({ state, authType, userUuid, tenantUuid: user.tenantUuid, extra: extra as never });
  callbacks.set(state, { callback, extra });
}

/** `public_url`, else the listener itself (its port, and 127.0.0.1 for a wildcard address). */
export function publicBaseUrl(config: AppContext["config"]): string {
  const api = config.rest_api;
  const host =
    api.listen === "0.0.0.0" || api.listen === "::"
      ? "127.0.0.1"
      : api.listen.includes(":")
        ? `[${api.listen}]`
        : api.listen;
  return config.public_url ?? `http://${host}:${api.port}`;
}

/**
 * The URL the OAuth2 provider sends the browser back to: under `oauth2_redirect_base_url` when set,
 * else under `public_url`, else under the listener itself (its port, and 127.0.0.1 for a wildcard
 * address), so a service on another port than 9497 still gets its own callbacks.
 */
export function buildOAuth2RedirectUrl(app: AppContext, authType: string): string {
  const base = app.config.oauth2_redirect_base_url ?? publicBaseUrl(app.config);
  return `${base.replace(/\/$/, "")}/0.1/external/${encodeURIComponent(authType)}/oauth2/callback`;
}

/** The provider redirected back: run the callback once (the state is consumed), then announce it. */
export async function completeOAuth2(
  app: AppContext,
  authType: string,
  message: Record<string, string>,
): Promise<void> {
  const state = message.state ?? "";
  const [row] = await app.db
    .delete(oauth2States)
    .where(
      and(
        eq(oauth2States.state, state),
        eq(oauth2States.authType, authType),
        gt(oauth2States.createdAt, new Date(Date.now() - STATE_TTL_MS)),
      ),
    )
    .returning();
  if (!row) throw new NotFound("external", state, "Unknown or expired authorization state");
  const local = callbacks.get(state);
  callbacks.delete(state);
  if (local) await local.callback(...local.extra, message);
  else {
    const plugin = app.plugins.externalAuth.get(authType);
    if (!plugin?.oauth2Callback) throw new NotFound("external", state, "Unknown or expired authorization state");
    await plugin.oauth2Callback(row.userUuid, message, ...(row.extra as unknown[]));
  }
  await inTransaction(app, (tx) => externalEvent(app, tx, "authorized", row.userUuid, row.tenantUuid, authType));
}
