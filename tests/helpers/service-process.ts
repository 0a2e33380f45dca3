// For tests that start the real process (or the single executable): wait for its liveness probe,
// and build Basic credentials the way an HTTP client does (UTF-8).

/** Polls `HEAD {base}/status` until it answers 200 or `seconds` pass; true when the service is up. */
export async function waitForService(base: string, seconds: number): Promise<boolean> {
  for (const until = Date.now() + seconds * 1000; Date.now() < until; ) {
    try {
      if ((await fetch(`${base}/status`, { method: "HEAD" })).status === 200) return true;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  return false;
}

/** `Authorization: Basic …` for a login and password, encoded as UTF-8. */
export const basicAuth = (login: string, password: string) => ({ Authorization: `Basic ${Buffer.from(`${login}:${password}`, "utf8").toString("base64")}` });

/** A TCP port free on 127.0.0.1 now (taken and released), for a process a test starts. */
export function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}
