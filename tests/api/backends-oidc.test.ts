// /0.1/backends/oidc: a tenant's upstream OpenID Connect providers, against a real upstream provider
// (panva's oidc-provider in a child process): discovery at creation through the outbound guard, the
// secret never read back, tenant isolation, the audit trail and the bus events.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { auditEntries, eventOutbox } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { tenantFamily, tokenFor } from "../helpers/fixtures.ts";
import { startUpstreamOidc, type UpstreamOidc } from "../helpers/upstream-oidc.ts";

const LOCAL = { outbound_http: { allow_private_targets: ["127.0.0.0/8"], allow_http: true } };

let upstream: UpstreamOidc;
beforeAll(async () => {
  upstream = await startUpstreamOidc();
});
afterAll(() => upstream?.stop());

const body = (extra: Record<string, unknown> = {}) => ({
  name: "corp",
  display_name: "Corp SSO",
  issuer: upstream.issuer,
  client_id: "tessera",
  client_secret: "s3cret-value",
  provisioning: "create",
  ...extra,
});

describeEachDb(
  "upstream OpenID providers: /0.1/backends/oidc",
  (get) => {
    let family: Awaited<ReturnType<typeof tenantFamily>>;
    let uuid: string;

    beforeAll(async () => {
      family = await tenantFamily(get().app);
    });

    test("POST answers 201 with the uuid and the redirect URI to register; never the secret", async () => {
      const t = get();
      const r = await t.request("POST", "/0.1/backends/oidc", { token: family.admin, body: body() });
      expect(r.status).toBe(201);
      uuid = r.json.uuid;
      expect(r.json).toMatchObject({
        tenant_uuid: family.tenant,
        name: "corp",
        display_name: "Corp SSO",
        preset: "oidc",
        issuer: upstream.issuer,
        client_id: "tessera",
        scopes: ["openid", "email", "profile"],
        provisioning: "create",
        claim_mapping: {
          username: "preferred_username",
          email: "email",
          firstname: "given_name",
          lastname: "family_name",
          locale: "locale",
        },
      });
      expect(r.json.redirect_uri).toMatch(new RegExp(`/0\\.1/oidc/upstream/${uuid}/callback$`));
      expect(r.text).not.toContain("s3cret-value");
      expect(r.json.client_secret).toBeUndefined();
    });

    test("GET lists them (collection) and reads one, without the secret", async () => {
      const t = get();
      const list = await t.request("GET", "/0.1/backends/oidc", { token: family.admin });
      expect(list.status).toBe(200);
      expect(list.json.total).toBe(1);
      expect(list.json.filtered).toBe(1);
      expect(list.json.items[0].uuid).toBe(uuid);
      const one = await t.request("GET", `/0.1/backends/oidc/${uuid}`, { token: family.admin });
      expect(one.status).toBe(200);
      expect(one.json.uuid).toBe(uuid);
      expect(list.text + one.text).not.toContain("s3cret-value");
    });

    test("PUT replaces the settings and keeps an absent secret; DELETE removes", async () => {
      const t = get();
      const { client_secret: _, ...noSecret } = body({ display_name: "Corp", provisioning: "link" });
      const r = await t.request("PUT", `/0.1/backends/oidc/${uuid}`, { token: family.admin, body: noSecret });
      expect(r.status).toBe(204);
      const one = await t.request("GET", `/0.1/backends/oidc/${uuid}`, { token: family.admin });
      expect(one.json.display_name).toBe("Corp");
      expect(one.json.provisioning).toBe("link");
      const made = await t.request("POST", "/0.1/backends/oidc", {
        token: family.admin,
        body: body({ name: "gone" }),
      });
      expect(made.status).toBe(201);
      expect((await t.request("DELETE", `/0.1/backends/oidc/${made.json.uuid}`, { token: family.admin })).status).toBe(
        204,
      );
      expect((await t.request("GET", `/0.1/backends/oidc/${made.json.uuid}`, { token: family.admin })).status).toBe(
        404,
      );
    });

    test("audited (the secret by name only) and evented", async () => {
      const t = get();
      const entries = await t.app.db
        .select()
        .from(auditEntries)
        .where(and(eq(auditEntries.targetUuid, uuid), eq(auditEntries.targetKind, "backend_oidc")));
      expect(entries.map((e) => e.action).sort()).toEqual(["backend_oidc.create", "backend_oidc.update"]);
      const create = entries.find((e) => e.action === "backend_oidc.create")!;
      expect(JSON.stringify(create.changes)).not.toContain("s3cret-value");
      expect(create.changes).toContainEqual({ field: "client_secret", old: null, new: null });
      const events = await t.app.db.select().from(eventOutbox);
      const names = events.map((e) => e.name);
      expect(names).toContain("auth_backend_oidc_created");
      expect(names).toContain("auth_backend_oidc_updated");
      expect(names).toContain("auth_backend_oidc_deleted");
      expect(JSON.stringify(events.filter((e) => e.name.startsWith("auth_backend_oidc")))).not.toContain(
        "s3cret-value",
      );
    });

    test("a duplicate name in the tenant is a 409", async () => {
      const r = await get().request("POST", "/0.1/backends/oidc", { token: family.admin, body: body() });
      expect(r.status).toBe(409);
      expect(r.json.details.name.constraint_id).toBe("unique");
    });

    test("tenant isolation: a sibling's admin (auth.#) neither sees nor changes; the parent sees", async () => {
      const t = get();
      const sib = family.siblingAdmin;
      expect((await t.request("GET", `/0.1/backends/oidc/${uuid}`, { token: sib })).status).toBe(404);
      expect((await t.request("GET", "/0.1/backends/oidc", { token: sib })).json.total).toBe(0);
      const { client_secret: _, ...noSecret } = body({ display_name: "Hijacked" });
      expect((await t.request("PUT", `/0.1/backends/oidc/${uuid}`, { token: sib, body: noSecret })).status).toBe(404);
      expect((await t.request("DELETE", `/0.1/backends/oidc/${uuid}`, { token: sib })).status).toBe(204);
      // Wazo-Tenant naming a tenant the caller cannot see is refused, as on every route.
      const forged = await t.request("GET", "/0.1/backends/oidc", { token: sib, tenant: family.tenant });
      expect(forged.status).toBe(401);
      const still = await t.request("GET", `/0.1/backends/oidc/${uuid}`, { token: family.admin });
      expect(still.json.display_name).toBe("Corp");
      // The child tenant's admin does not see its parent's provider either.
      expect((await t.request("GET", `/0.1/backends/oidc/${uuid}`, { token: family.childAdmin })).status).toBe(404);
    });

    test("ACLs auth.backends.oidc.*: read alone cannot create", async () => {
      const t = get();
      const reader = (await tokenFor(t.app, { acl: ["auth.backends.oidc.read"], tenantUuid: family.tenant })).token;
      expect((await t.request("GET", `/0.1/backends/oidc/${uuid}`, { token: reader })).status).toBe(200);
      const r = await t.request("POST", "/0.1/backends/oidc", { token: reader, body: body({ name: "x" }) });
      expect(r.status).toBe(403);
    });

    test("bad input is a 400 naming the field: missing secret, bad provisioning, non-URL issuer", async () => {
      const t = get();
      const { client_secret: _, ...noSecret } = body({ name: "n1" });
      const a = await t.request("POST", "/0.1/backends/oidc", { token: family.admin, body: noSecret });
      expect(a.status).toBe(400);
      expect(a.json.details.client_secret).toBeDefined();
      const b = await t.request("POST", "/0.1/backends/oidc", {
        token: family.admin,
        body: body({ name: "n2", provisioning: "sometimes" }),
      });
      expect(b.status).toBe(400);
      expect(b.json.details.provisioning).toBeDefined();
      const c = await t.request("POST", "/0.1/backends/oidc", {
        token: family.admin,
        body: body({ name: "n3", issuer: "not a url" }),
      });
      expect(c.status).toBe(400);
      expect(c.json.details.issuer.constraint_id).toBe("outbound_url");
    });

    test("an issuer that cannot be reached is a clear 400 at creation; nothing stored", async () => {
      const t = get();
      const r = await t.request("POST", "/0.1/backends/oidc", {
        token: family.admin,
        body: body({ name: "down", issuer: "http://127.0.0.1:9" }),
      });
      expect(r.status).toBe(400);
      expect(r.json.details.issuer.constraint_id).toBe("discovery");
      expect(r.json.details.issuer.message).toContain("cannot be reached");
      const list = await t.request("GET", "/0.1/backends/oidc?name=down", { token: family.admin });
      expect(list.json.filtered).toBe(0);
    });
  },
  { config: LOCAL },
);

describeEachDb("upstream OpenID providers: the outbound policy refuses private addresses by default", (get) => {
  test("a loopback issuer is a 400 before any request", async () => {
    const t = get();
    const family = await tenantFamily(t.app);
    for (const issuer of [upstream.issuer, "http://localhost:8080", "https://169.254.169.254/latest"]) {
      const r = await t.request("POST", "/0.1/backends/oidc", { token: family.admin, body: body({ issuer }) });
      expect(r.status).toBe(400);
      expect(r.json.details.issuer.constraint_id).toBe("outbound_url");
    }
  });
});
