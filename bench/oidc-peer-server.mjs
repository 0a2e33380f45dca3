// The benchmark's peer (bench/oidc-peer.ts): panva's oidc-provider 9 under Node, with its in-memory
// adapter (the default), ES256 and RS256 signing keys as Tessera publishes, and one confidential
// client allowed the client credentials grant and introspection. Usage:
//   node bench/oidc-peer-server.mjs <port> <client_id> <client_secret>
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";

const [port, clientId, clientSecret] = process.argv.slice(2);
const jwk = async (alg) => ({
  ...(await exportJWK(
    (
      await generateKeyPair(alg, { extractable: true, ...(alg === "RS256" ? { modulusLength: 2048 } : {}) })
    ).privateKey,
  )),
  alg,
  use: "sig",
});
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  jwks: { keys: [await jwk("ES256"), await jwk("RS256")] },
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  features: {
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    devInteractions: { enabled: false },
  },
});
// Quiet: no per-request output (the benchmark measures the provider, not a console).
provider.on("server_error", (_ctx, err) => console.error(err));
provider.listen(Number(port), "127.0.0.1", () => console.log(`oidc-provider listening on ${issuer}`));
