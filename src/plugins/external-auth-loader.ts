// Start-up work of issue 5 (external auth plugins). Placeholder until that issue lands.
import type { AppContext } from "../context.ts";

export async function loadExternalAuthPlugins(_app: AppContext): Promise<void> {}
