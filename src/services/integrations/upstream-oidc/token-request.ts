// The authorization code exchanged at an upstream token endpoint (RFC 6749 §4.1.3), through the outbound
// guard: the endpoint is a URL a tenant administrator chose. The answer's JSON is returned whole for the
// caller to check (an OpenID provider's `id_token`, GitHub's `access_token`); a refusal is logged with the
// provider's `error` code only, never the body (it may carry tokens).
import type { AppContext } from "../../../boot/context.ts";
import { OutboundRefused, outboundFetch } from "../../outbound/fetch.ts";
import { unseal } from "../../secrets/sealing.ts";
import { policyOf } from "./discovery.ts";
import type { ProviderRow } from "./providers.ts";
import { UpstreamSignInRefused } from "./refused.ts";

/**
 * `basic`: client_secret_basic (RFC 6749 §2.3.1, the id and secret form-urlencoded first), what OpenID
 * providers default to; `post`: client_secret_post, the parameters GitHub documents.
 */
export type ClientAuthentication = "basic" | "post";

export async function requestTokens(
  app: AppContext,
  provider: ProviderRow,
  endpoint: string,
  params: Record<string, string>,
  auth: ClientAuthentication,
  /** True when the answer is usable; else the sign-in is refused. */
  usable: (body: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = {
    "Content-Type": "application/x-www-form-urlencoded",
    // GitHub answers form-encoded unless asked for JSON.
    Accept: "application/json",
  };
  const form = new URLSearchParams(params);
  const secret = unseal(app, provider.clientSecret, provider.uuid);
  if (auth === "basic")
    headers.Authorization = `Basic ${Buffer.from(
      `${encodeURIComponent(provider.clientId)}:${encodeURIComponent(secret)}`,
    ).toString("base64")}`;
  else {
    form.set("client_id", provider.clientId);
    form.set("client_secret", secret);
  }
  let answer: Awaited<ReturnType<typeof outboundFetch>>;
  try {
    answer = await outboundFetch(endpoint, { method: "POST", headers, body: form.toString() }, policyOf(app));
  } catch (e) {
    if (!(e instanceof OutboundRefused)) throw e;
    throw new UpstreamSignInRefused(`${provider.displayName} cannot be reached now (${e.message}).`, "unreachable");
  }
  let body: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(answer.body) as unknown;
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    body = {};
  }
  // GitHub answers a refused code with 200 and an `error` member: the status alone does not say.
  if (answer.status !== 200 || typeof body.error === "string" || !usable(body)) {
    app.log.info("upstream token request refused", {
      provider_uuid: provider.uuid,
      status: answer.status,
      error: typeof body.error === "string" ? body.error.slice(0, 100) : null,
    });
    throw new UpstreamSignInRefused(`${provider.displayName} refused to complete the sign-in.`, "token_endpoint");
  }
  return body;
}
