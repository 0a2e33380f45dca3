// How the OpenID Connect provider's copies in memory — the clients read for client authentication,
// the JWK Set and the signing keys — stay true across instances: the database announces each change
// on commit (`tessera_oidc_changed`, migration 0027) and every instance drops what it names. While
// notifications may be missed, those copies are not used (they share the token cache's trust), and
// once hearing resumes they are dropped, as the token cache is.
import type { AppContext } from "../../boot/context.ts";
import { forgetClient } from "./clients.ts";
import { signingKeysChanged } from "./keys.ts";

export const OIDC_CHANNEL = "tessera_oidc_changed";

/** Subscribes this instance to the notices; returns the unsubscribe (a close hook). */
export async function listenOidcChanges(app: AppContext): Promise<() => Promise<void>> {
  const unlisten = await app.database.listen(OIDC_CHANNEL, (payload) => applyOidcNotice(app, payload));
  app.database.onListenChange((listening) => {
    if (listening) applyOidcNotice(app, "*"); // a change may have been missed meanwhile
  });
  return unlisten;
}

/** `client:<client_id>`, `keys`, or anything else (a bulk or unknown change): everything goes. */
export function applyOidcNotice(app: AppContext, payload: string): void {
  if (payload.startsWith("client:")) {
    forgetClient(app, payload.slice("client:".length));
    return;
  }
  if (payload !== "keys") forgetClient(app, null);
  signingKeysChanged(app);
}
