// Passkeys on the hosted login page (issue 25): the ceremony options for its passkey buttons (the
// second step's, or passwordless sign-in's where the client's tenant allows it), passwordless
// sign-in itself (user verification required; the user's own tenant must allow it too), and the
// pages' same-origin scripts. A passwordless sign-in continues as every sign-in does
// (web/flow/authorization.ts continueSignIn): the browser session with `amr` [hwk|swk, mfa], consent, the code.
import type { Context } from "hono";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { RouteGroup, type Env } from "../http/route.ts";
import { PAGE_SCRIPTS, pageScript } from "./pages/oidc-assets.ts";
import { tenantAllowsPasswordless } from "../services/auth/mfa-policy.ts";
import { checkAuthorizationRequest } from "../services/oidc/authorize.ts";
import { passkeyOptions, passwordlessProof } from "../services/oidc/mfa-sign-in.ts";
import { provenSignIn } from "../services/oidc/sign-in.ts";
import { answerCheck, continueSignIn, loginForm, oidcFlow } from "./flow/authorization.ts";
import { fatal, OPTIONS_ACTION, parseJson, refusal, stepPasskeyOptions } from "./flow/second-step.ts";
import {
  browserOrigin,
  CSRF_REFUSED,
  csrfMatches,
  GENERIC_FAILURE,
  outagePage,
  stringParams,
} from "./pages/browser.ts";
import { requestIssuer, requestRp } from "../http/public-urls.ts";

/** Passkey options, for the second step (`pending` set) or passwordless sign-in (the client's tenant allows it). */
async function options(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  const refused = c.json({ error: "invalid_request" }, 400);
  if (!(await csrfMatches(c, app, params.csrf_token))) return refused;
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
  if (check.kind !== "ok") return refused;
  if (params.pending) return stepPasskeyOptions(c, app, oidcFlow(c, app, check, params), params);
  if (!(await tenantAllowsPasswordless(app, check.client.tenantUuid))) return refused;
  return c.json(await passkeyOptions(app, requestRp(c, app), null));
}

async function passwordless(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  if (!(await csrfMatches(c, app, params.csrf_token))) return fatal(c, app, CSRF_REFUSED, 400);
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
  if (check.kind !== "ok") return answerCheck(c, app, check);
  const origin = browserOrigin(c, app);
  try {
    const done = await passwordlessProof(
      app,
      requestRp(c, app),
      params.challenge_id ?? "",
      parseJson(params.credential),
      origin,
    );
    const signedIn = await provenSignIn(app, check.client, check.request.scope, done.proven, origin);
    // RFC 8176 §2: proof of possession of a key (`hwk`/`swk`) with the authenticator's user verification.
    return await continueSignIn(c, app, check, params, signedIn, done.proven.login, done.amr);
  } catch (e) {
    return refusal(c, app, e, () => loginForm(c, app, check, params, { message: GENERIC_FAILURE, status: 401 }));
  }
}

const formBody = z.record(z.string(), z.unknown());
const html = (description: string) => ({ description, contentType: "text/html" });

export function passkeySignInRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page")
    .post(
      `/oidc/${OPTIONS_ACTION}`,
      {
        summary: "WebAuthn request options for the login page's passkey button (second factor or passwordless)",
        operationId: "getOidcPasskeyOptions",
        door: "api", // JSON for the page's script
        bodyType: "form",
        body: formBody,
        responses: { 200: "`{challenge_id, options}`", 400: "`{error}`: CSRF, request or sign-in not valid" },
      },
      ({ c, app, body }) => options(c, app, body),
    )
    .post(
      "/oidc/passkey-sign-in",
      {
        summary:
          "Passwordless sign-in with a passkey (user verification required), where the user's tenant allows it; then consent or the code",
        operationId: "submitOidcPasskeySignIn",
        bodyType: "form",
        body: formBody,
        responses: {
          200: html("The consent page (a third-party client)"),
          303: "Back to the client with `code`",
          400: html("Error page"),
          401: html("The login page again, with the generic failure"),
          429: html("Too many attempts"),
          503: html("Database outage"),
        },
      },
      ({ c, app, body }) => outagePage(app, () => passwordless(c, app, body), c, body),
    )
    .get(
      "/oidc/assets/{name}",
      {
        summary: "The login and account pages' scripts (passkey.js, webauthn-browser.js)",
        operationId: "getOidcAsset",
        door: "api",
        params: z.object({ name: z.enum(PAGE_SCRIPTS) }),
        responses: { 200: { description: "The script", contentType: "text/javascript" }, 400: "Unknown asset" },
      },
      ({ params }) => pageScript(params.name),
    );
}
