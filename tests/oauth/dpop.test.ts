// Sender-constrained tokens (DPoP, RFC 9449): panva's openid-client binds its tokens with its DPoP
// handle (token endpoint, refresh, userinfo); hand-made proofs (jose) show every refusal of §4.3,
// §5 and §7, and the server nonces of §8.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import * as oidc from "openid-client";
import { oidcAccessTokens } from "../../src/db/schema.ts";
import { accessTokenHash } from "../../src/services/oidc/dpop.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { browserSignIn, insecure, serveApp, type ServedApp } from "../helpers/oidc.ts";

const REDIRECT = "https://rp.example.com/callback";
const CALLD = "https://calld.example.com";
const EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";

interface Key {
  privateKey: CryptoKey;
  jwk: JWK;
  jkt: string;
}

async function newKey(alg = "ES256"): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

interface ProofClaims {
  htm?: string;
  htu: string;
  iat?: number;
  jti?: string;
  ath?: string;
  nonce?: string;
}

/** A DPoP proof as RFC 9449 §4.2 shapes it; `header` overrides the protected header. */
function proofOf(key: Key, claims: ProofClaims, header: Record<string, unknown> = {}): Promise<string> {
  const { iat = Math.floor(Date.now() / 1000), jti = crypto.randomUUID(), htm = "POST", ...rest } = claims;
  return new SignJWT({ htm, jti, iat, ...rest })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: key.jwk, ...header })
    .sign(key.privateKey);
}

async function oauthError(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    const err = e as { error?: string; cause?: { error?: string } };
    return err.error ?? err.cause?.error ?? String(e);
  }
  throw new Error("expected a refusal");
}

function dpopSuite(name: string, requireNonce: boolean) {
  describeEachDb(
    name,
    (get) => {
      let served: ServedApp;
      let issuer: URL;
      let tokenUrl: string;
      let admin: string;
      let alice: string;
      let service: { client_id: string; client_secret: string };
      let bound: { client_id: string; client_secret: string };
      let spa: { client_id: string };

      const register = async (body: Record<string, unknown>) => {
        const r = await get().request("POST", "/0.1/oidc/clients", {
          token: admin,
          body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], first_party: true, ...body },
        });
        if (r.status !== 201) throw new Error(r.text);
        return r.json;
      };
      const basic = (c: { client_id: string; client_secret: string }) =>
        `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString("base64")}`;
      /** A client-credentials token request with `proof` (none: no DPoP header). */
      const ccRequest = (proof: string | undefined, client = service) =>
        fetch(tokenUrl, {
          method: "POST",
          headers: {
            Authorization: basic(client),
            "Content-Type": "application/x-www-form-urlencoded",
            ...(proof ? { DPoP: proof } : {}),
          },
          body: "grant_type=client_credentials",
        });
      /** The server nonce (§8) when the suite requires one: the first proof is answered use_dpop_nonce. */
      const nonceFor = async (key: Key): Promise<string | undefined> => {
        if (!requireNonce) return undefined;
        const r = await ccRequest(await proofOf(key, { htu: tokenUrl }));
        expect(r.status).toBe(400);
        expect((await r.json()).error).toBe("use_dpop_nonce");
        const nonce = r.headers.get("DPoP-Nonce");
        expect(nonce).toBeString();
        return nonce!;
      };
      const dpopHandle = async (config: oidc.Configuration, key?: CryptoKeyPair) => {
        const handle = oidc.getDPoPHandle(config, key ?? (await oidc.randomDPoPKeyPair("ES256")));
        return handle;
      };
      /** openid-client retries a use_dpop_nonce refusal once the handle learnt the nonce (§8). */
      const withNonceRetry = async <T>(call: () => Promise<T>): Promise<T> => {
        try {
          return await call();
        } catch (e) {
          if (!requireNonce || (e as { error?: string }).error !== "use_dpop_nonce") throw e;
          return call();
        }
      };

      beforeAll(async () => {
        const t = get();
        served = serveApp(t);
        issuer = new URL(`${served.url}/0.1/oidc`);
        tokenUrl = `${issuer.href}/token`;
        const tenant = await createTenantRow(t.app);
        admin = (await tokenFor(t.app, { acl: ["auth.#", "confd.#", "calld.#"], tenantUuid: tenant })).token;
        alice = await createUserRow(t.app, { tenantUuid: tenant, username: "alice", password: "alice-secret" });
        service = await register({
          name: "Daemon",
          redirect_uris: [],
          grant_types: ["client_credentials", EXCHANGE],
          acl: ["calld.#"],
        });
        bound = await register({
          name: "Bound",
          redirect_uris: [],
          grant_types: ["client_credentials"],
          dpop_bound_access_tokens: true,
        });
        spa = await register({
          name: "SPA",
          client_type: "public",
          scopes: ["openid", "profile", "offline_access"],
          grant_types: ["authorization_code", "refresh_token"],
        });
        const r = await t.request("POST", "/0.1/oidc/resources", {
          token: admin,
          body: { identifier: CALLD, acl: ["calld.#"], token_format: "jwt" },
        });
        expect(r.status).toBe(201);
      });
      afterAll(() => served?.stop());

      test("discovery names the proof algorithms; the client metadata is kept and shown", async () => {
        const meta = await (await fetch(`${issuer.href}/.well-known/openid-configuration`)).json();
        expect(meta.dpop_signing_alg_values_supported).toEqual(["ES256", "RS256", "PS256", "EdDSA"]);
        const shown = await get().request("GET", `/0.1/oidc/clients/${bound.client_id}`, { token: admin });
        expect(shown.json.dpop_bound_access_tokens).toBe(true);
        const other = await get().request("GET", `/0.1/oidc/clients/${service.client_id}`, { token: admin });
        expect(other.json.dpop_bound_access_tokens).toBe(false);
      });

      test("openid-client: code flow, userinfo and refresh bound to the public client's key", async () => {
        const config = await oidc.discovery(issuer, spa.client_id, undefined, oidc.None(), insecure);
        const keyPair = await oidc.randomDPoPKeyPair("ES256");
        const DPoP = await dpopHandle(config, keyPair);
        const verifier = oidc.randomPKCECodeVerifier();
        const state = oidc.randomState();
        const url = oidc.buildAuthorizationUrl(config, {
          redirect_uri: REDIRECT,
          scope: "openid profile offline_access",
          code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
          code_challenge_method: "S256",
          state,
        });
        const back = await browserSignIn(served.url, url.toString(), "alice", "alice-secret");
        const tokens = await withNonceRetry(() =>
          oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state }, undefined, {
            DPoP,
          }),
        );
        expect(tokens.token_type).toBe("dpop");
        const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));
        const [row] = await get()
          .app.db.select({ jkt: oidcAccessTokens.jkt })
          .from(oidcAccessTokens)
          .where(eq(oidcAccessTokens.tokenUuid, tokens.access_token));
        expect(row?.jkt).toBe(jkt);
        // Userinfo with the proof (§7.1) answers; the same token as a bearer token is refused (§7.2).
        const info = await withNonceRetry(() => oidc.fetchUserInfo(config, tokens.access_token, alice, { DPoP }));
        expect(info.sub).toBe(alice);
        const asBearer = await fetch(`${issuer.href}/userinfo`, {
          headers: { Authorization: `Bearer ${tokens.access_token}` },
        });
        expect(asBearer.status).toBe(401);
        expect(asBearer.headers.get("WWW-Authenticate")).toStartWith('DPoP error="invalid_token"');
        // A proof whose ath is of another token (§4.3 step 10).
        const key = await newKey();
        const nonce = requireNonce ? await nonceFor(key) : undefined;
        const wrongAth = await fetch(`${issuer.href}/userinfo`, {
          headers: {
            Authorization: `DPoP ${tokens.access_token}`,
            DPoP: await proofOf(key, {
              htm: "GET",
              htu: `${issuer.href}/userinfo`,
              ath: accessTokenHash("another token"),
              nonce,
            }),
          },
        });
        expect(wrongAth.status).toBe(401);
        expect(wrongAth.headers.get("WWW-Authenticate")).toStartWith('DPoP error="invalid_dpop_proof"');
        // The right ath, but another key than the token's.
        const otherKey = await fetch(`${issuer.href}/userinfo`, {
          headers: {
            Authorization: `DPoP ${tokens.access_token}`,
            DPoP: await proofOf(key, {
              htm: "GET",
              htu: `${issuer.href}/userinfo`,
              ath: accessTokenHash(tokens.access_token),
              nonce,
            }),
          },
        });
        expect(otherKey.status).toBe(401);
        if (requireNonce) {
          // Userinfo asks for the nonce as the token endpoint does (§8.2: 401 with DPoP-Nonce).
          const noNonce = await fetch(`${issuer.href}/userinfo`, {
            headers: {
              Authorization: `DPoP ${tokens.access_token}`,
              DPoP: await proofOf(key, {
                htm: "GET",
                htu: `${issuer.href}/userinfo`,
                ath: accessTokenHash(tokens.access_token),
              }),
            },
          });
          expect(noNonce.status).toBe(401);
          expect(noNonce.headers.get("WWW-Authenticate")).toStartWith('DPoP error="use_dpop_nonce"');
          expect(noNonce.headers.get("DPoP-Nonce")).toBe(nonce!);
        }
        // The refresh token is bound too (§5): another key, or none, is refused; the same key renews.
        const otherHandle = await dpopHandle(config);
        expect(
          await oauthError(
            withNonceRetry(() =>
              oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: otherHandle }),
            ),
          ),
        ).toBe("invalid_dpop_proof");
        expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).toBe("invalid_dpop_proof");
        const renewed = await withNonceRetry(() =>
          oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP }),
        );
        expect(renewed.token_type).toBe("dpop");
        expect(renewed.refresh_token).not.toBe(tokens.refresh_token);
        // The rotated successor is bound to the same key.
        expect(await oauthError(oidc.refreshTokenGrant(config, renewed.refresh_token!))).toBe("invalid_dpop_proof");
        const again = await withNonceRetry(() => oidc.fetchUserInfo(config, renewed.access_token, alice, { DPoP }));
        expect(again.sub).toBe(alice);
      });

      test("openid-client: client credentials with a resource: the RFC 9068 JWT carries cnf.jkt", async () => {
        const config = await oidc.discovery(
          issuer,
          service.client_id,
          undefined,
          oidc.ClientSecretBasic(service.client_secret),
          insecure,
        );
        const keyPair = await oidc.randomDPoPKeyPair("ES256");
        const DPoP = await dpopHandle(config, keyPair);
        const tokens = await withNonceRetry(() => oidc.clientCredentialsGrant(config, { resource: CALLD }, { DPoP }));
        expect(tokens.token_type).toBe("dpop");
        const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));
        expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt });
        // Without a proof, the same client gets a bearer token (it is not dpop_bound_access_tokens).
        const plain = await oidc.clientCredentialsGrant(config);
        expect(plain.token_type).toBe("bearer");
        // An opaque bound token: introspection names its key (RFC 9449 §6.2); a bearer one has none.
        const opaque = await withNonceRetry(() => oidc.clientCredentialsGrant(config, undefined, { DPoP }));
        const seen = await oidc.tokenIntrospection(config, opaque.access_token);
        expect(seen).toMatchObject({ active: true, token_type: "DPoP", cnf: { jkt } });
        const seenJwt = await oidc.tokenIntrospection(config, tokens.access_token);
        expect(seenJwt.cnf).toEqual({ jkt });
        expect((await oidc.tokenIntrospection(config, plain.access_token)).cnf).toBeUndefined();
        // The token check (HEAD/GET /0.1/token/{t}): a bearer token as before; a bound one only
        // with `Authorization: DPoP` and a proof of its key for the check itself (§7).
        const check = (method: string, token: string, headers: Record<string, string> = {}) =>
          fetch(`${served.url}/0.1/token/${token}?scope=calld.calls.read`, { method, headers });
        expect((await check("HEAD", plain.access_token)).status).toBe(204);
        // The REST API takes tokens as bearer tokens (X-Auth-Token): a bound one is refused there.
        const rest = (token: string) => fetch(`${served.url}/0.1/tenants`, { headers: { "X-Auth-Token": token } });
        expect((await rest(plain.access_token)).status).not.toBe(401);
        expect((await rest(opaque.access_token)).status).toBe(401);
        const scopesCheck = await fetch(`${served.url}/0.1/token/${opaque.access_token}/scopes/check`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ scopes: ["calld.calls.read"] }),
        });
        expect(scopesCheck.status).toBe(401);
        for (const token of [opaque.access_token, tokens.access_token]) {
          const bare = await check("HEAD", token);
          expect(bare.status).toBe(401);
          expect(bare.headers.get("WWW-Authenticate")).toStartWith('DPoP error="invalid_token"');
          const key = { privateKey: keyPair.privateKey, jwk: await exportJWK(keyPair.publicKey), jkt };
          const htu = `${served.url}/0.1/token/${token}`;
          const nonce = requireNonce ? await nonceFor(key) : undefined;
          const proof = (htm: string, ath = accessTokenHash(token)) => proofOf(key, { htm, htu, ath, nonce });
          const asBearer = await check("GET", token, { Authorization: `Bearer ${token}`, DPoP: await proof("GET") });
          expect(asBearer.status).toBe(401);
          const wrongAth = await check("GET", token, {
            Authorization: `DPoP ${token}`,
            DPoP: await proof("GET", accessTokenHash("x")),
          });
          expect(wrongAth.status).toBe(401);
          expect(wrongAth.headers.get("WWW-Authenticate")).toStartWith('DPoP error="invalid_dpop_proof"');
          const wrongHtm = await check("GET", token, { Authorization: `DPoP ${token}`, DPoP: await proof("HEAD") });
          expect(wrongHtm.status).toBe(401);
          const head = await check("HEAD", token, { Authorization: `DPoP ${token}`, DPoP: await proof("HEAD") });
          expect(head.status).toBe(204);
          const got = await check("GET", token, { Authorization: `DPoP ${token}`, DPoP: await proof("GET") });
          expect(got.status).toBe(200);
          // Another key's proof, however well made, is refused.
          const other = await newKey();
          const otherNonce = requireNonce ? await nonceFor(other) : undefined;
          const stolen = await check("HEAD", token, {
            Authorization: `DPoP ${token}`,
            DPoP: await proofOf(other, { htm: "HEAD", htu, ath: accessTokenHash(token), nonce: otherNonce }),
          });
          expect(stolen.status).toBe(401);
        }
        // A Tessera token's hex digits are case-insensitive (RFC 9562 §4): the bound token written in
        // capitals, in the URL and the header alike (or only in one), passes as in lower case.
        const key = { privateKey: keyPair.privateKey, jwk: await exportJWK(keyPair.publicKey), jkt };
        const upper = opaque.access_token.toUpperCase();
        expect(upper).not.toBe(opaque.access_token);
        for (const [inUrl, inHeader] of [
          [upper, upper],
          [upper, opaque.access_token],
          [opaque.access_token, upper],
        ]) {
          const nonce = requireNonce ? await nonceFor(key) : undefined;
          const proof = await proofOf(key, {
            htm: "GET",
            htu: `${served.url}/0.1/token/${inUrl}`,
            ath: accessTokenHash(inHeader!),
            nonce,
          });
          const r = await check("GET", inUrl!, { Authorization: `DPoP ${inHeader}`, DPoP: proof });
          expect({ inUrl, inHeader, status: r.status }).toEqual({ inUrl, inHeader, status: 200 });
        }
      });

      test("hand-made proofs: each refusal of RFC 9449 §4.3 and §5.2", async () => {
        const key = await newKey();
        const nonce = await nonceFor(key);
        const refusal = async (proof: string | undefined, client = service) => {
          const r = await ccRequest(proof, client);
          expect(r.status).toBe(400);
          return (await r.json()).error;
        };
        const now = Math.floor(Date.now() / 1000);
        expect(await refusal(await proofOf(key, { htm: "GET", htu: tokenUrl, nonce }))).toBe("invalid_dpop_proof");
        expect(await refusal(await proofOf(key, { htu: `${issuer.href}/userinfo`, nonce }))).toBe("invalid_dpop_proof");
        expect(await refusal(await proofOf(key, { htu: tokenUrl, iat: now - 3600, nonce }))).toBe("invalid_dpop_proof");
        expect(await refusal(await proofOf(key, { htu: tokenUrl, iat: now + 3600, nonce }))).toBe("invalid_dpop_proof");
        expect(await refusal(await proofOf(key, { htu: tokenUrl, nonce }, { typ: "JWT" }))).toBe("invalid_dpop_proof");
        const priv = { ...key.jwk, ...(await exportJWK(key.privateKey)) };
        expect(await refusal(await proofOf(key, { htu: tokenUrl, nonce }, { jwk: priv }))).toBe("invalid_dpop_proof");
        // Signed by another key than the header's.
        const other = await newKey();
        expect(await refusal(await proofOf(other, { htu: tokenUrl, nonce }, { jwk: key.jwk }))).toBe(
          "invalid_dpop_proof",
        );
        // A MAC is not a proof.
        const hs = await new SignJWT({ htm: "POST", htu: tokenUrl, iat: now, jti: crypto.randomUUID() })
          .setProtectedHeader({ alg: "HS256", typ: "dpop+jwt", jwk: key.jwk })
          .sign(new Uint8Array(32));
        expect(await refusal(hs)).toBe("invalid_dpop_proof");
        // dpop_bound_access_tokens: no proof, no token.
        expect(await refusal(undefined, bound)).toBe("invalid_dpop_proof");
        // A good proof (its htu with a query, ignored: §4.3 step 9) — once; its replay is refused (§11.1).
        const good = await proofOf(key, { htu: `${tokenUrl}?x=1`, nonce });
        const ok = await ccRequest(good, bound);
        expect(ok.status).toBe(200);
        const subject = (await ok.json()) as { access_token: string; token_type: string };
        expect(subject.token_type).toBe("DPoP");
        expect(await refusal(good, bound)).toBe("invalid_dpop_proof");
        // Token exchange (RFC 8693): a bound subject_token only with a proof of its key.
        const exchange = async (proof: string | undefined) =>
          fetch(tokenUrl, {
            method: "POST",
            headers: {
              Authorization: basic(service),
              "Content-Type": "application/x-www-form-urlencoded",
              ...(proof ? { DPoP: proof } : {}),
            },
            body: new URLSearchParams({
              grant_type: EXCHANGE,
              subject_token: subject.access_token,
              subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
            }),
          });
        const unproven = await exchange(undefined);
        expect(unproven.status).toBe(400);
        expect((await unproven.json()).error).toBe("invalid_dpop_proof");
        const stranger = await newKey();
        const strangerNonce = await nonceFor(stranger);
        const otherKey = await exchange(await proofOf(stranger, { htu: tokenUrl, nonce: strangerNonce }));
        expect((await otherKey.json()).error).toBe("invalid_dpop_proof");
        const proven = await exchange(await proofOf(key, { htu: tokenUrl, nonce }));
        expect(proven.status).toBe(200);
        expect((await proven.json()).token_type).toBe("DPoP");
      });

      if (requireNonce)
        test("§8: a proof without the server's nonce, or with a made-up one, is told the nonce", async () => {
          const key = await newKey();
          const r = await ccRequest(await proofOf(key, { htu: tokenUrl, nonce: "A".repeat(43) }));
          expect(r.status).toBe(400);
          expect((await r.json()).error).toBe("use_dpop_nonce");
          const nonce = r.headers.get("DPoP-Nonce")!;
          const ok = await ccRequest(await proofOf(key, { htu: tokenUrl, nonce }));
          expect(ok.status).toBe(200);
          expect((await ok.json()).token_type).toBe("DPoP");
        });
    },
    requireNonce ? { config: { oidc: { dpop_require_nonce: true } } } : {},
  );
}

dpopSuite("DPoP (RFC 9449): sender-constrained tokens", false);
dpopSuite("DPoP (RFC 9449) with server nonces (§8)", true);
