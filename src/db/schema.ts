// The whole data model of wazo-auth (wazo-auth's data model), column for column, so an existing
// wazo-auth database can be imported, plus Tessera's own tables (prefixed `tessera_`).
export * from "./tables/identity.ts";
export * from "./tables/tokens.ts";
export * from "./tables/integrations.ts";
export * from "./tables/throttling.ts";
export * from "./tables/counters.ts";
export * from "./tables/saml.ts";
export * from "./tables/oidc.ts";
export * from "./tables/mfa.ts";
export * from "./tables/audit.ts";
export * from "./tables/passkeys.ts";
export * from "./tables/password-policy.ts";
export * from "./tables/outbound.ts";
export * from "./tables/upstream-oidc.ts";
export * from "./tables/branding.ts";
export * from "./tables/scim.ts";
