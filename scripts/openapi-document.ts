// The OpenAPI document as the service serves it with the default configuration (stock plugins),
// built in-process on a throw-away embedded database. `bun scripts/openapi-document.ts FILE`
// writes it; the client generator and its staleness test use `openApiDocument()`.
import { parseConfig } from "../src/config/config.ts";
import { openDatabase } from "../src/db/index.ts";
import { silentLogger } from "../src/observe/log.ts";
import { createApp } from "../src/app.ts";
import { buildContext, closeContext } from "../src/services/app-context.ts";
import { startServices } from "../src/boot/startup.ts";

export async function openApiDocument(): Promise<string> {
  const database = await openDatabase({ dataDir: "memory://" });
  const app = await buildContext(parseConfig({ token_cleanup_interval: 0 }), database, silentLogger);
  try {
    await startServices(app);
    const res = await createApp(app).request("/0.1/api/api.yml");
    if (res.status !== 200) throw new Error(`GET /0.1/api/api.yml answered ${res.status}`);
    return await res.text();
  } finally {
    await closeContext(app);
  }
}

if (import.meta.main) {
  const file = process.argv[2];
  const text = await openApiDocument();
  if (file) await Bun.write(file, text);
  else process.stdout.write(text);
}
