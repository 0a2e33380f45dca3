// What an OIDC access token was granted: the exchanged code behind it (a plain Tessera token has none).
import { and, eq, isNotNull } from "drizzle-orm";
import type { AppContext } from "../../context.ts";
import { oidcCodes } from "../../db/schema.ts";

export async function grantOfToken(
  app: AppContext,
  tokenUuid: string,
): Promise<{ userUuid: string; scope: string[]; clientId: string } | null> {
  const [row] = await app.db
    .select({ userUuid: oidcCodes.userUuid, scope: oidcCodes.scope, clientId: oidcCodes.clientId })
    .from(oidcCodes)
    .where(and(eq(oidcCodes.tokenUuid, tokenUuid), isNotNull(oidcCodes.usedAt)))
    .limit(1);
  return row ? { ...row, scope: row.scope.split(" ") } : null;
}
