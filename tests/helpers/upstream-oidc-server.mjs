// An upstream OpenID provider for the tests: panva's oidc-provider (OpenID-certified), run under Node in
// a child process by tests/helpers/upstream-oidc.ts. Its login and consent are answered at once for the
// account the test chose (POST /control); POST /control also sets a tampering mode, in which the ID token
// of the token endpoint is re-signed with a claim made wrong (iss, aud, nonce, exp, azp) or signed with a
// key the provider does not publish (signature). `options.features` turns on more of the provider's features
// (backchannelLogout, rpInitiatedLogout for the logout tests). Prints `{"issuer": …}` on its first line once listening.
// With `github: true` it stands in for GitHub Enterprise Server at its origin: plain OAuth 2.0 (no `openid`
// scope, no ID token) at GitHub's paths (`/login/oauth/authorize`, `/login/oauth/access_token`), and the
// REST API's `/api/v3/user` and `/api/v3/user/emails` answering GitHub's documented JSON shapes for the
// account of the access token (found with oidc-provider's own `AccessToken.find`).
import { createServer } from "node:http";
import { exportJWK, generateKeyPair, importJWK, SignJWT, decodeJwt } from "jose";
import Provider from "oidc-provider";

const options = JSON.parse(process.argv[2] ?? "{}");
const { privateKey } = await generateKeyPair("RS256", { extractable: true });
const signingJwk = { ...(await exportJWK(privateKey)), kid: "upstream-1", alg: "RS256", use: "sig" };
const stranger = (await generateKeyPair("RS256")).privateKey;
// `amr`: the RFC 8176 methods the next logins claim (oidc-provider puts the login result's `amr` in its ID tokens).
const control = { account: "alice", tamper: null, amr: null };
const accounts = options.accounts ?? {};
/** The query of the last authorization request (OIDC Core §3.1.2.1; GitHub's `/login/oauth/authorize`). */
let lastAuthorization = null;

let provider;
const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, "http://x");
    // A logout token (Back-Channel Logout 1.0 §2.4) with the claims given, signed with the provider's key
    // (or, `stranger`, with one it does not publish): the tests' hostile logout tokens.
    if (url.pathname === "/control/logout-token" && req.method === "POST") {
      let raw = "";
      for await (const chunk of req) raw += chunk;
      const { claims, stranger: foreign } = JSON.parse(raw);
      const key = foreign ? stranger : await importJWK(signingJwk, "RS256");
      const jwt = await new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: signingJwk.kid, typ: "logout+jwt" })
        .sign(key);
      res.writeHead(200, { "Content-Type": "text/plain" }).end(jwt);
      return;
    }
    if (url.pathname === "/control" && req.method === "POST") {
      let raw = "";
      for await (const chunk of req) raw += chunk;
      Object.assign(control, JSON.parse(raw || "{}"));
      if (control.accounts) Object.assign(accounts, control.accounts);
      res.writeHead(204).end();
      return;
    }
    if (url.pathname === "/control/last-authorization" && req.method === "GET") {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(lastAuthorization));
      return;
    }
    if (url.pathname.endsWith("/auth") || url.pathname === "/login/oauth/authorize")
      lastAuthorization = Object.fromEntries(url.searchParams);
    if (url.pathname.startsWith("/interaction/")) {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === "login") {
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: control.account, ...(control.amr ? { amr: control.amr } : {}) } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      if (missing.missingResourceScopes)
        for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes))
          grant.addResourceScope(indicator, scopes.join(" "));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }
    if (options.github) {
      if (url.pathname.startsWith("/api/v3/")) return await githubApi(req, res, url.pathname.slice(7));
      // GitHub's paths onto oidc-provider's (mounted as Express would mount it: `originalUrl` keeps them).
      const own = { "/login/oauth/authorize": "/auth", "/login/oauth/access_token": "/token" }[url.pathname];
      if (own) {
        req.originalUrl = req.url;
        req.url = own + url.search;
      }
    }
    // Entra-style: the provider lives under `/{tid}/v2.0`, and `/common/v2.0` serves its discovery with
    // the template issuer (mounted as Express would mount it: `originalUrl` keeps the prefix).
    if (options.tid) {
      const own = `/${options.tid}/v2.0`;
      if (url.pathname === "/common/v2.0/.well-known/openid-configuration") {
        req.originalUrl = req.url;
        req.url = "/.well-known/openid-configuration";
        req.headers["x-template-issuer"] = "1";
        req.originalUrl = `${own}/.well-known/openid-configuration`;
      } else if (url.pathname.startsWith(own)) {
        req.originalUrl = req.url;
        req.url = req.url.slice(own.length) || "/";
      }
    }
    provider.callback()(req, res);
  } catch (e) {
    res.writeHead(500, { "Content-Type": "text/plain" }).end(String(e?.stack ?? e));
  }
});

/** GET /user (REST API "Get the authenticated user") and /user/emails ("List email addresses for the authenticated user"). */
async function githubApi(req, res, path) {
  const bearer = /^(?:Bearer|token) (.+)$/i.exec(req.headers.authorization ?? "")?.[1];
  const token = bearer ? await provider.AccessToken.find(bearer) : undefined;
  const account = token ? accounts[token.accountId] : undefined;
  const json = (status, body) =>
    res.writeHead(status, { "Content-Type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
  if (!account) return json(401, { message: "Bad credentials", documentation_url: "https://docs.github.com/rest" });
  if (!req.headers["user-agent"]) return json(403, { message: "Request forbidden by administrative rules." });
  const emails = account.emails ?? [];
  if (path === "/user") {
    const visible = emails.find((e) => e.primary && e.visibility === "public");
    return json(200, {
      login: account.login,
      id: account.id,
      node_id: `U_${account.id}`,
      type: "User",
      name: account.name ?? null,
      email: visible?.email ?? null,
    });
  }
  if (path === "/user/emails") {
    // `user:email` is what this endpoint needs (GitHub answers 404 without it).
    if (
      !String(token.scope ?? "")
        .split(" ")
        .includes("user:email")
    )
      return json(404, { message: "Not Found" });
    return json(
      200,
      emails.map((e) => ({
        email: e.email,
        primary: !!e.primary,
        verified: !!e.verified,
        visibility: e.visibility ?? null,
      })),
    );
  }
  return json(404, { message: "Not Found" });
}

await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${server.address().port}`;
const issuer = options.tid ? `${origin}/${options.tid}/v2.0` : origin;

provider = new Provider(issuer, {
  clients: [],
  jwks: { keys: [signingJwk] },
  cookies: { keys: ["upstream-test-cookie-key"] },
  features: {
    registration: { enabled: true },
    devInteractions: { enabled: false },
    ...(options.features ?? {}),
  },
  claims: {
    // `amr` in the ID token whenever the login had one (control.amr; oidc-provider filters by scope).
    openid: ["sub", "amr"],
    email: ["email", "email_verified"],
    profile: ["preferred_username", "given_name", "family_name", "name", "locale", "ui_language"],
    ...(options.tid ? { openid: ["sub", "amr", "tid"] } : {}),
  },
  // GitHub's scopes (REST API "Scopes for OAuth apps"), granted as the others.
  ...(options.github ? { scopes: ["openid", "offline_access", "read:user", "user:email"] } : {}),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (_ctx, id) =>
    accounts[id] === undefined
      ? undefined
      : {
          accountId: id,
          claims: async () => ({ sub: id, ...accounts[id], ...(options.tid ? { tid: options.tid } : {}) }),
        },
  clientDefaults: {
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
    id_token_signed_response_alg: "RS256",
  },
  pkce: { required: () => true },
  // Its logout tokens go to Tessera on a loopback address, which its SSRF guard (a dispatcher refusing
  // special-use addresses) would refuse: the tests' provider calls without it.
  fetch: (url, init) => fetch(url, { ...init, dispatcher: undefined }),
  // Entra ID puts its claims (`tid` among them) in the ID token.
  ...(options.tid ? { conformIdTokenClaims: false } : {}),
});
provider.on("server_error", (_ctx, e) => console.error(e));
provider.on("backchannel.error", (_ctx, e) =>
  console.error(`backchannel logout: ${e.message} ${e.cause?.message ?? ""}`),
);

// An Entra-style multi-tenant discovery document announces a template issuer.
if (options.tid) {
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.get("x-template-issuer") && ctx.body?.issuer)
      ctx.body = { ...ctx.body, issuer: `${origin}/{tenantid}/v2.0` };
  });
}

provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== "/token" || !control.tamper || typeof ctx.body?.id_token !== "string") return;
  const claims = decodeJwt(ctx.body.id_token);
  const now = Math.floor(Date.now() / 1000);
  switch (control.tamper) {
    case "iss":
      claims.iss = "https://someone-else.example.com";
      break;
    case "aud":
      claims.aud = "another-client";
      break;
    case "nonce":
      claims.nonce = "not-the-nonce";
      break;
    case "exp":
      claims.iat = now - 7200;
      claims.exp = now - 3600;
      break;
    case "azp":
      claims.aud = [claims.aud, "another-client"];
      delete claims.azp;
      break;
  }
  const key = control.tamper === "signature" ? stranger : await importJWK(signingJwk, "RS256");
  ctx.body = {
    ...ctx.body,
    id_token: await new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: signingJwk.kid }).sign(key),
  };
});

process.stdout.write(`${JSON.stringify({ issuer, origin })}\n`);
