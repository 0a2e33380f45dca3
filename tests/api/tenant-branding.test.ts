// A tenant's branding of the hosted pages (issue 43): saved and read back through the API, refused
// with the one 400 body when a colour is not #rrggbb, when a contrast is below WCAG AA, or when the
// logo is not a small inline image; audited; invisible tenants are 404; and on the tenant's sign-in
// page the colours and the name show while the CSP and the CSRF field stay as they are.
import { expect, test } from "bun:test";
import { describeEachDb } from "../helpers/app.ts";
import { tenantFamily } from "../helpers/fixtures.ts";
import { hiddenFieldsOf, serveApp } from "../helpers/oidc.ts";
import { startAuthorization, discoverClient } from "../helpers/oidc.ts";

// The smallest PNG: one transparent pixel.
const PNG =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

describeEachDb("tenant branding", (get) => {
  test("saved, read back, replaced; colours lower-cased; all null is the stock look", async () => {
    const t = get();
    const { tenant, admin } = await tenantFamily(t.app);
    const path = `/0.1/tenants/${tenant}/branding`;
    expect((await t.request("GET", path, { token: admin })).json).toEqual({
      product_name: null,
      logo: null,
      primary_color: null,
      background_color: null,
      text_color: null,
    });
    const body = {
      product_name: "Acme Phone",
      logo: PNG,
      primary_color: "#1A4D2E",
      background_color: "#FFFFFF",
      text_color: "#111111",
    };
    const saved = await t.request("PUT", path, { token: admin, body });
    expect([saved.status, saved.text]).toEqual([204, ""]);
    const read = (await t.request("GET", path, { token: admin })).json;
    expect([read.primary_color, read.background_color, read.logo]).toEqual(["#1a4d2e", "#ffffff", PNG]);
    expect((await t.request("GET", path, { token: admin })).json.product_name).toBe("Acme Phone");
    const audit = await t.request("GET", `/0.1/audit?action=tenant.branding.update&target_uuid=${tenant}`, {
      token: admin,
    });
    expect(audit.json.items).toHaveLength(1);
    // The logo is in the audit entry by its size, never as the image.
    expect(JSON.stringify(audit.json.items[0].changes)).not.toContain("base64");
    expect((await t.request("PUT", path, { token: admin, body: {} })).status).toBe(204);
    expect((await t.request("GET", path, { token: admin })).json).toEqual({
      product_name: null,
      logo: null,
      primary_color: null,
      background_color: null,
      text_color: null,
    });
  });

  test("refusals: contrast below AA names the field and the ratio; not #rrggbb; a logo that is no small image", async () => {
    const t = get();
    const { tenant, admin } = await tenantFamily(t.app);
    const path = `/0.1/tenants/${tenant}/branding`;
    let r = await t.request("PUT", path, { token: admin, body: { primary_color: "#ffeb3b" } });
    expect([r.status, r.json.error_id, r.json.details.primary_color.constraint_id]).toEqual([
      400,
      "invalid-data",
      "contrast",
    ]);
    expect(r.json.details.primary_color.constraint.min_ratio).toBe(4.5);
    expect(r.json.details.primary_color.constraint.ratio).toBeLessThan(4.5);
    // Grey on grey: the text fails, and so do the stock blue links on that background.
    r = await t.request("PUT", path, { token: admin, body: { text_color: "#777777", background_color: "#888888" } });
    expect([r.status, Object.keys(r.json.details).sort()]).toEqual([400, ["primary_color", "text_color"]]);
    for (const primary_color of ["red", "#fff", "#12345g", "#123456; } body { display:none", "url(x)"]) {
      r = await t.request("PUT", path, { token: admin, body: { primary_color } });
      expect([r.status, Object.keys(r.json.details)]).toEqual([400, ["primary_color"]]);
    }
    for (const logo of [
      "https://evil.example/logo.png",
      "data:image/svg+xml;base64,PHN2Zz48c2NyaXB0Pjwvc2NyaXB0Pjwvc3ZnPg==",
      "data:image/png;base64,aGVsbG8=",
      `data:image/png;base64,${Buffer.alloc(60_000, 1).toString("base64")}`,
    ]) {
      r = await t.request("PUT", path, { token: admin, body: { logo } });
      expect([r.status, Object.keys(r.json.details)]).toEqual([400, ["logo"]]);
    }
    expect((await t.request("GET", path, { token: admin })).json.primary_color).toBeNull();
  });

  test("another tenant's administrator neither reads nor changes it", async () => {
    const t = get();
    const { tenant, admin, siblingAdmin, childAdmin } = await tenantFamily(t.app);
    const path = `/0.1/tenants/${tenant}/branding`;
    await t.request("PUT", path, { token: admin, body: { product_name: "Mine" } });
    expect((await t.request("GET", path, { token: siblingAdmin })).status).toBe(404);
    expect((await t.request("PUT", path, { token: siblingAdmin, body: { product_name: "Theirs" } })).status).toBe(404);
    expect((await t.request("PUT", path, { token: childAdmin, body: { product_name: "Child" } })).status).toBe(404);
    expect((await t.request("GET", path, { token: admin })).json.product_name).toBe("Mine");
  });

  test("the tenant's sign-in page shows it; the CSP gains only img-src data:, the CSRF field stays", async () => {
    const t = get();
    const { tenant, admin } = await tenantFamily(t.app);
    const served = serveApp(t);
    try {
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        body: {
          name: "Softphone",
          client_type: "confidential",
          redirect_uris: ["https://rp.example.com/cb"],
          first_party: true,
        },
      });
      const config = await discoverClient(new URL(`${served.url}/0.1/oidc`), client.json);
      const before = await fetch((await startAuthorization(config, "https://rp.example.com/cb")).url);
      const plain = await before.text();
      expect(plain).toContain("--primary: #0b57d0;");
      expect(before.headers.get("content-security-policy")).not.toContain("img-src");
      await t.request("PUT", `/0.1/tenants/${tenant}/branding`, {
        token: admin,
        body: { product_name: "Acme <Phone>", logo: PNG, primary_color: "#1a4d2e" },
      });
      const res = await fetch((await startAuthorization(config, "https://rp.example.com/cb")).url);
      const html = await res.text();
      expect(html).toContain("--primary: #1a4d2e;");
      expect(html).toContain('<img src="data:image/png;base64,');
      expect(html).toContain('alt="Acme &lt;Phone&gt;"');
      expect(html).toContain("<title>Sign in to Softphone – Acme &lt;Phone&gt;</title>");
      expect(hiddenFieldsOf(html).csrf_token).toBeTruthy();
      const csp = res.headers.get("content-security-policy")!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("img-src data:;");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain("unsafe");
    } finally {
      await served.stop();
    }
  });

  test("a sub-tenant without a branding wears its nearest ancestor's; an empty one of its own, the stock look", async () => {
    const t = get();
    const { tenant, child, admin } = await tenantFamily(t.app);
    const grandchild = (
      await t.request("POST", "/0.1/tenants", { token: admin, tenant: child, body: { name: "Below" } })
    ).json.uuid as string;
    const served = serveApp(t);
    try {
      // The grandchild's own client: its pages are the grandchild's.
      const client = await t.request("POST", "/0.1/oidc/clients", {
        token: admin,
        tenant: grandchild,
        body: { name: "Desk", client_type: "confidential", redirect_uris: ["https://rp.example.com/cb"] },
      });
      expect(client.status).toBe(201);
      const config = await discoverClient(new URL(`${served.url}/0.1/oidc`), client.json);
      const page = async () =>
        (await fetch((await startAuthorization(config, "https://rp.example.com/cb")).url)).text();
      const brand = (uuid: string, body: Record<string, unknown>) =>
        t.request("PUT", `/0.1/tenants/${uuid}/branding`, { token: admin, body });
      expect(await page()).toContain("--primary: #0b57d0;");
      expect((await brand(tenant, { product_name: "Reseller", primary_color: "#1a4d2e" })).status).toBe(204);
      const inherited = await page();
      expect(inherited).toContain("--primary: #1a4d2e;");
      expect(inherited).toContain("– Reseller</title>");
      // The nearer ancestor wins, whole.
      expect((await brand(child, { product_name: "Customer" })).status).toBe(204);
      const nearer = await page();
      expect(nearer).toContain("– Customer</title>");
      expect(nearer).toContain("--primary: #0b57d0;");
      // An empty branding of its own: the stock look, whatever is above.
      expect((await brand(grandchild, {})).status).toBe(204);
      const own = await page();
      expect(own).not.toContain("Customer");
      expect(own).not.toContain("Reseller");
    } finally {
      await served.stop();
    }
  });
});
