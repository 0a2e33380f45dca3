// `tessera backends oidc list|show|create|delete` against a real service and a real upstream provider
// (panva's oidc-provider, child process): the discovery fetched at creation, the redirect URI to register
// shown, the secret never shown again.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CliService, cliKinds } from "../helpers/cli-service.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

let upstream: UpstreamOidc;
beforeAll(async () => {
  upstream = await startUpstreamOidc();
});
afterAll(() => upstream?.stop());

for (const kind of cliKinds()) {
  describe(`tessera backends oidc [${kind}]`, () => {
    const service = new CliService(kind, "backends-oidc", (dir) => {
      const config = join(dir, "config-upstream.yml");
      writeFileSync(
        config,
        "password_hash_iterations: 1000\noutbound_http:\n  allow_private_targets: [127.0.0.0/8]\n  allow_http: true\n",
      );
      return { TESSERA_CONFIG: config };
    });
    beforeAll(() => service.start(), 90_000);
    afterAll(() => service.stop());

    test("create (redirect URI shown, secret not), list, show, delete; an unreachable issuer is refused", async () => {
      const created = await service.tessera(
        [
          "backends",
          "oidc",
          "create",
          "--name",
          "corp",
          "--display-name",
          "Corp SSO",
          "--issuer",
          upstream.issuer,
          "--client-id",
          "tessera",
          "--client-secret",
          "cli-s3cret",
          "--provisioning",
          "create",
          "--upstream-logout",
          "true",
          "--trust-amr",
          "true",
          "--json",
        ],
        service.admin,
      );
      expect([created.code, created.err]).toEqual([0, ""]);
      const provider = JSON.parse(created.out) as {
        uuid: string;
        redirect_uri: string;
        upstream_logout: boolean;
        trust_amr: boolean;
        backchannel_logout_uri: string;
      };
      expect(provider.redirect_uri).toBe(`${service.url}/0.1/oidc/upstream/${provider.uuid}/callback`);
      // Logout with the provider (docs/federation.md "Logout"): on, and the URI to register for it.
      expect(provider.upstream_logout).toBe(true);
      // The provider's multi-factor amr trusted (docs/federation.md "Multi-factor").
      expect(provider.trust_amr).toBe(true);
      expect(provider.backchannel_logout_uri).toBe(
        `${service.url}/0.1/oidc/upstream/${provider.uuid}/backchannel-logout`,
      );
      expect(created.out).not.toContain("cli-s3cret");
      const listed = await service.tessera(["backends", "oidc", "list"], service.admin);
      expect(listed.out).toContain("Corp SSO");
      const shown = await service.tessera(["backends", "oidc", "show", provider.uuid, "--json"], service.admin);
      expect(JSON.parse(shown.out).issuer).toBe(upstream.issuer);
      expect(shown.out).not.toContain("cli-s3cret");
      const down = await service.tessera(
        [
          "backends",
          "oidc",
          "create",
          "--name",
          "down",
          "--issuer",
          "http://127.0.0.1:9",
          "--client-id",
          "x",
          "--client-secret",
          "y",
        ],
        service.admin,
      );
      expect([down.code, down.err]).toEqual([1, expect.stringContaining("cannot be reached")]);
      const deleted = await service.tessera(["backends", "oidc", "delete", provider.uuid], service.admin);
      expect(deleted.code).toBe(0);
      const after = await service.tessera(["backends", "oidc", "list", "--json"], service.admin);
      expect(JSON.parse(after.out).total).toBe(0);
    }, 60_000);
  });
}
