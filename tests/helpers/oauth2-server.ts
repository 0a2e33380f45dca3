// A real OAuth2 authorization server on loopback (the maintained `oauth2-mock-server` package):
// /authorize redirects back with a code, /token serves authorization_code and refresh_token grants.
import { OAuth2Server } from "oauth2-mock-server";

export async function startOAuth2Server(): Promise<{
  url: string;
  tokenRequests: () => number;
  close(): Promise<void>;
}> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate("RS256");
  await server.start(0, "127.0.0.1");
  let count = 0;
  server.service.on("beforeResponse", () => count++);
  return { url: server.issuer.url!, tokenRequests: () => count, close: () => server.stop() };
}
