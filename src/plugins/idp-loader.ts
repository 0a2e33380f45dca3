// Start-up work of issue 4 (IdP and metadata plugins). Placeholder until that issue lands.
import type { AppContext } from "../context.ts";

export async function loadIdentityProviders(_app: AppContext): Promise<void> {}
