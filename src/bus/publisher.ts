// Start-up work of issue 7 (AMQP outbox publisher). Placeholder until that issue lands.
import type { AppContext } from "../context.ts";

export async function startBus(_app: AppContext): Promise<void> {}
