// What a grant of the token endpoint declares (RFC 6749 §4: each grant is a `grant_type` value and
// the parameters it adds to the token request). The token endpoint, the clients' registration and
// the provider metadata read the registry of grants (index.ts); a grant is one file and one line there.
import type { AppContext } from "../../../boot/context.ts";
import type { ClientRow } from "../clients.ts";
import type { Form, RequestOrigin, TokenResponse } from "../grants.ts";

/** What the token endpoint knows of the request, beyond the client and the form. */
export interface GrantRequest {
  /** The issuer as the request sees it (ID tokens' `iss`). */
  issuer: string;
  origin: RequestOrigin;
  /** True once the request was already answered 503 (http/deadline.ts): a grant may roll back then. */
  abandoned: () => boolean;
}

export interface Grant<Type extends string = string> {
  /** The `grant_type` value (RFC 6749 §4.1.3, §4.4.2, §6; RFC 8628 §3.4). */
  type: Type;
  /** The form parameters the grant reads (besides `grant_type` and client authentication): its handler sees only these. */
  parameters: readonly string[];
  /** The token response for an authenticated client allowed this grant; refusals throw OAuthError. */
  handle(app: AppContext, client: ClientRow, form: Form, request: GrantRequest): Promise<TokenResponse>;
  /**
   * RFC 8707 §2.1: the resource the grant was authorized for (a code's authorization request), which
   * the token request must name or leave out; null when none was indicated.
   */
  authorizedResource?(app: AppContext, client: ClientRow, form: Form): Promise<string | null>;
}
