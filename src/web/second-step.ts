// The login page's second step (POST /oidc/authorize-mfa): a code, a passkey, or enrolling TOTP, after
// a password accepted for a user with a factor. The step itself is flow/second-step.ts; where it leads
// (the browser session, consent, the code) is flow/authorization.ts.
import type { Context } from "hono";
import { z } from "zod";
import type { AppContext } from "../boot/context.ts";
import { requestIssuer } from "../http/public-urls.ts";
import { RouteGroup, type Env } from "../http/route.ts";
import { checkAuthorizationRequest } from "../services/oidc/authorize.ts";
import { answerCheck, oidcFlow } from "./flow/authorization.ts";
import { fatal, runStep, STEP_ACTION } from "./flow/second-step.ts";
import { CSRF_REFUSED, csrfMatches, outagePage, stringParams } from "./pages/browser.ts";

async function submitStep(c: Context<Env>, app: AppContext, body: Record<string, unknown>): Promise<Response> {
  const params = stringParams(body);
  if (!(await csrfMatches(c, app, params.csrf_token))) return fatal(c, app, CSRF_REFUSED, 400);
  const check = await checkAuthorizationRequest(app, params, requestIssuer(c, app));
  if (check.kind !== "ok") return answerCheck(c, app, check);
  return runStep(c, app, oidcFlow(c, app, check, params), params);
}

const formBody = z.record(z.string(), z.unknown());
const html = (description: string) => ({ description, contentType: "text/html" });

export function mfaStepRoutes(): RouteGroup {
  return new RouteGroup("oidc", "page").post(
    `/oidc/${STEP_ACTION}`,
    {
      summary:
        "The login page's second step: a TOTP or recovery code, a passkey, or enrolling TOTP when the tenant requires MFA; then consent or the code",
      operationId: "submitOidcSecondStep",
      bodyType: "form",
      body: formBody,
      responses: {
        200: html("The next step (recovery codes after enrolment), or the consent page"),
        303: "Back to the client with `code`, `state` and `iss`",
        400: html("Error page (expired sign-in, CSRF) or the enrolment again"),
        401: html("The step again: wrong code or passkey (counted as a failed login)"),
        429: html("Too many attempts"),
        503: html("Database outage"),
      },
    },
    ({ c, app, body }) => outagePage(app, () => submitStep(c, app, body), c, body),
  );
}
