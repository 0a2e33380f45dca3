// Start-up work of issue 3 (default policies, all-users policies, default groups). Placeholder until that issue lands.
import type { AppContext } from "../context.ts";

export async function syncPoliciesOnStartup(_app: AppContext): Promise<void> {}
