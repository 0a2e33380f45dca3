// Start-up warnings about settings that leave a security feature off or a wazo-auth key without its
// old effect (logged once by startup.ts; pure, so tests read them directly).
import type { Config } from "./config.ts";

export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.rest_api.num_proxies > 0 && config.rest_api.trusted_proxies.length === 0) {
    warnings.push(
      "rest_api.num_proxies no longer makes X-Forwarded-For trusted: list the proxies' addresses in rest_api.trusted_proxies (docs/security.md, \"Client address\"); until then every client address is the socket peer's",
    );
  }
  if (!config.public_url) {
    warnings.push(
      "public_url is not set: password-reset, email-confirmation and registration mails are refused (503) rather than linking to the request's Host header; set public_url to the API's public base URL",
    );
    warnings.push(
      `public_url is not set: the OpenID provider, the hosted pages and the console answer only for the listener's own address, loopback names${config.accepted_hosts.length ? " and accepted_hosts" : ""} (any other Host header gets 421) rather than building the issuer from the Host header; set public_url to the API's public base URL (or list the names clients use in accepted_hosts)`,
    );
    if (config.rest_api.trusted_proxies.length === 0)
      warnings.push(
        'public_url is not set and rest_api.trusted_proxies is empty: X-Script-Name (the path prefix a reverse proxy serves the API under) is ignored, so the OpenID issuer and the OpenAPI document have no prefix; behind nginx on this host (Wazo\'s layout) set rest_api.trusted_proxies: ["127.0.0.1", "::1"], or public_url',
      );
  }
  const policy = config.password_policy;
  if (policy.min_length < 8 || !policy.common_passwords) {
    warnings.push(
      `password_policy (min_length ${policy.min_length}, common_passwords ${policy.common_passwords}) is below NIST SP 800-63B's (8, true): for tests only`,
    );
  }
  return warnings;
}
