// Start-up work of issue 6 (email notification plugin). Placeholder until that issue lands.
import type { AppContext } from "../context.ts";

export async function loadEmailPlugin(_app: AppContext): Promise<void> {}
