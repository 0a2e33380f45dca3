// POST /0.1/token: log in and get a token (wazo-auth's login flow, token API).
import type { Context } from "hono";
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { requestOrigin } from "../http/request-origin.ts";
import { CAPS, isStorableString, text } from "../domain/strings.ts";
import { intField } from "../domain/validate.ts";
import { login } from "../services/auth/authentication.ts";

const tokenBody = z
  .object({
    backend: text(CAPS.shortName).optional(),
    expiration: intField(1, 315360000).optional(),
    access_type: z.enum(["online", "offline"]).optional(),
    client_id: text(CAPS.clientId, { min: 1, maxBytes: CAPS.clientIdBytes }).optional(),
    refresh_token: text(CAPS.shortName).optional(),
    saml_session_id: text(1024, { min: 1 }).optional(),
    tenant_id: text(CAPS.shortName).optional(),
    domain_name: text(253).optional(),
    mfa_code: text(64, { min: 1 }).optional(),
    // An ID token of a tenant's upstream OpenID provider, for native sign-in (docs/federation.md).
    idp_token: text(16_384, { min: 1 }).optional(),
  })
  .superRefine((b, ctx) => {
    const rule = (path: string, message: string) =>
      ctx.addIssue({
        code: "custom",
        path: [path],
        message,
        params: { constraint_id: "predicate", constraint: message },
      });
    if (b.access_type === "offline" && !b.client_id)
      rule("client_id", '"client_id" must be specified when "access_type" is "offline"');
    if (b.access_type === "offline" && b.refresh_token)
      rule("refresh_token", '"refresh_token" cannot be used with "access_type" "offline"');
    if (b.refresh_token && !b.client_id) rule("client_id", '"client_id" must be specified when using "refresh_token"');
    if (b.refresh_token && b.saml_session_id)
      rule("saml_session_id", '"refresh_token" and "saml_session_id" cannot be used together');
    if (b.refresh_token && b.idp_token) rule("idp_token", '"refresh_token" and "idp_token" cannot be used together');
    if (b.tenant_id && b.domain_name) rule("domain_name", '"tenant_id" and "domain_name" cannot be used together');
  });

/** `Authorization: Basic`, decoded as UTF-8 then Latin-1; split on the first `:`. */
export function basicCredentials(header: string | undefined): { login: string | null; password: string | null } {
  const none = { login: null, password: null };
  if (!header || !/^basic\s+/i.test(header)) return none;
  let bytes: Buffer;
  try {
    bytes = Buffer.from(header.replace(/^basic\s+/i, "").trim(), "base64");
  } catch {
    return none;
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    text = bytes.toString("latin1");
  }
  const i = text.indexOf(":");
  if (i < 0) return none;
  const loginPart = text.slice(0, i);
  const password = text.slice(i + 1);
  // Credentials count only when both parts are present, and a login the database could not even
  // compare (NUL, unpaired surrogate, absurd length) names nobody: no credentials, a plain 401.
  return loginPart && password && isStorableString(loginPart, CAPS.pathSegment) ? { login: loginPart, password } : none;
}

function headerRecord(c: Context): Record<string, string> {
  const out: Record<string, string> = {};
  c.req.raw.headers.forEach((v, k) => {
    if (k !== "authorization") out[k] = v;
  });
  return out;
}

export function loginRoutes(): RouteGroup {
  return new RouteGroup("tokens").post(
    "/token",
    {
      summary: "Log in: Basic credentials (or a refresh token, or an identity provider) → a token",
      headers: {
        Authorization: "Basic base64(login:password)",
        "Wazo-Session-Type": "`mobile` for a mobile session",
        "User-Agent": "stored with the session",
      },
      body: tokenBody,
      responses: {
        200: "`{data: token}`, header `Wazo-Sessions-Revoked`",
        400: "Invalid body",
        401: "Authentication failed (always the same answer); `mfa-required` (with `details.methods`) when the password was right but the user's second factor is missing: retry with `mfa_code`",
        429: "The user has too many sessions (`too-many-sessions`), or the login or address is throttled after too many failures (`too-many-requests`, `Retry-After`)",
        503: "The service cannot check or count the attempt now (database outage)",
      },
    },
    async ({ c, app, body }) => {
      const { login: loginName, password } = basicCredentials(c.req.header("Authorization"));
      const origin = requestOrigin(c, app.config.rest_api.trusted_proxies);
      const result = await login(app, {
        login: loginName,
        password,
        body,
        mobile: (c.req.header("Wazo-Session-Type") ?? "").toLowerCase() === "mobile",
        userAgent: c.req.header("User-Agent") ?? "",
        remoteAddr: origin.address,
        forwarded: origin.forwarded,
        headers: headerRecord(c),
      });
      return c.json({ data: result.token }, 200, { "Wazo-Sessions-Revoked": String(result.sessionsRevoked) });
    },
  );
}
