// The grants of the token endpoint (RFC 6749 §4.1, §6, §4.4; RFC 8628 §3.4; RFC 8693), in the order the provider
// metadata lists them. Implicit and password are not offered (RFC 9700 §2.1.2, §2.4). The token
// endpoint (oauth/token.ts), the clients' registration (the `grant_types` a client may name) and the
// provider metadata (`grant_types_supported`) read this list: a new grant is one file here and one line.
import { authorizationCodeGrant } from "./authorization-code.ts";
import { clientCredentialsGrant } from "./client-credentials.ts";
import { deviceCodeGrant } from "./device-code.ts";
import type { Grant } from "./grant.ts";
import { refreshTokenGrant } from "./refresh-token.ts";
import { tokenExchangeGrant } from "./token-exchange.ts";

export const GRANTS = [
  authorizationCodeGrant,
  refreshTokenGrant,
  clientCredentialsGrant,
  deviceCodeGrant,
  tokenExchangeGrant,
] as const;

export type GrantType = (typeof GRANTS)[number]["type"];
export const GRANT_TYPES = GRANTS.map((g) => g.type) as [GrantType, ...GrantType[]];

/** The grant of a `grant_type` value, if the token endpoint offers it. */
export const grantOf = (type: string): Grant | undefined => GRANTS.find((g) => g.type === type);

export type { Grant, GrantRequest } from "./grant.ts";
