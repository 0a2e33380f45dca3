// A client's logout metadata on the clients API (Back-Channel Logout 1.0 §2.2, Front-Channel Logout
// 1.0 §2), under the default outbound_http policy: https only, no private or loopback address, no
// fragment, the front-channel URI on a redirect URI's origin — each refusal a 400 naming the field;
// kept by a PUT that does not name it, removed by null; audited; and discovery without public_url
// (no issuer to name in a logout token sent later) does not offer back-channel logout.
import { beforeAll, describe, expect, test } from "bun:test";
import { InvalidData } from "../../src/domain/errors.ts";
import { logoutMetadataFromJson } from "../../src/services/oidc/logout-metadata.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createTenantRow, tokenFor } from "../helpers/fixtures.ts";

const REDIRECT = "https://rp.example.com/callback";

describeEachDb("OIDC client logout metadata", (get) => {
  let admin: string;
  let tenant: string;

  beforeAll(async () => {
    const t = get();
    tenant = await createTenantRow(t.app);
    admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  });

  const create = (extra: Record<string, unknown>) =>
    get().request("POST", "/0.1/oidc/clients", {
      token: admin,
      body: { name: "rp", client_type: "confidential", redirect_uris: [REDIRECT], ...extra },
    });

  test("registered, returned, kept by a PUT that does not name them, removed by null", async () => {
    const t = get();
    const r = await create({
      backchannel_logout_uri: "https://rp.example.com/backchannel?x=1",
      backchannel_logout_session_required: true,
      frontchannel_logout_uri: "https://rp.example.com/frontchannel",
      frontchannel_logout_session_required: true,
    });
    expect(r.status).toBe(201);
    expect(r.json.backchannel_logout_uri).toBe("https://rp.example.com/backchannel?x=1");
    expect(r.json.backchannel_logout_session_required).toBe(true);
    expect(r.json.frontchannel_logout_uri).toBe("https://rp.example.com/frontchannel");
    expect(r.json.frontchannel_logout_session_required).toBe(true);
    const id = r.json.client_id;
    const put = (body: Record<string, unknown>) =>
      t.request("PUT", `/0.1/oidc/clients/${id}`, {
        token: admin,
        body: { name: "rp", redirect_uris: [REDIRECT], ...body },
      });
    expect((await put({})).status).toBe(204);
    let read = (await t.request("GET", `/0.1/oidc/clients/${id}`, { token: admin })).json;
    expect(read.backchannel_logout_uri).toBe("https://rp.example.com/backchannel?x=1");
    expect(read.frontchannel_logout_session_required).toBe(true);
    expect((await put({ backchannel_logout_uri: null, frontchannel_logout_session_required: false })).status).toBe(204);
    read = (await t.request("GET", `/0.1/oidc/clients/${id}`, { token: admin })).json;
    expect(read.backchannel_logout_uri).toBeNull();
    expect(read.backchannel_logout_session_required).toBe(true);
    expect(read.frontchannel_logout_uri).toBe("https://rp.example.com/frontchannel");
    expect(read.frontchannel_logout_session_required).toBe(false);
    // The change is in the audit trail, as every client change.
    const audit = await t.request("GET", `/0.1/audit?target_uuid=${id}&action=oidc_client.update`, {
      token: admin,
      tenant,
    });
    expect(audit.status).toBe(200);
    expect(audit.json.items.length).toBe(2);
    expect(JSON.stringify(audit.json.items)).toContain("backchannel_logout_uri");
    // A client registered without them: none, false.
    const bare = await create({});
    expect(bare.json.backchannel_logout_uri).toBeNull();
    expect(bare.json.backchannel_logout_session_required).toBe(false);
    expect(bare.json.frontchannel_logout_uri).toBeNull();
    expect(bare.json.frontchannel_logout_session_required).toBe(false);
  });

  test("refused: plain http, a loopback, private, link-local or metadata address, credentials, a fragment, not a URL — each a 400 naming the field; nothing written", async () => {
    const t = get();
    const before = (await t.request("GET", "/0.1/oidc/clients", { token: admin })).json.total;
    const cases: Array<[string, string, string]> = [
      ["backchannel_logout_uri", "http://rp.example.com/bc", "outbound_url"],
      ["backchannel_logout_uri", "https://127.0.0.1/bc", "outbound_url"],
      ["backchannel_logout_uri", "https://10.1.2.3/bc", "outbound_url"],
      ["backchannel_logout_uri", "https://169.254.169.254/latest/meta-data", "outbound_url"],
      ["backchannel_logout_uri", "https://[::1]/bc", "outbound_url"],
      ["backchannel_logout_uri", "https://localhost/bc", "outbound_url"],
      ["backchannel_logout_uri", "https://user:pw@rp.example.com/bc", "outbound_url"],
      ["backchannel_logout_uri", "https://rp.example.com/bc#x", "no_fragment"],
      ["backchannel_logout_uri", "not a url", "outbound_url"],
      ["frontchannel_logout_uri", "https://rp.example.com/fc#x", "no_fragment"],
      ["frontchannel_logout_uri", "http://rp.example.com/fc", "outbound_url"],
      ["frontchannel_logout_uri", "https://elsewhere.example.com/fc", "redirect_uri_origin"],
      ["frontchannel_logout_uri", "https://rp.example.com:8443/fc", "redirect_uri_origin"],
    ];
    for (const [field, uri, constraint] of cases) {
      const r = await create({ [field]: uri });
      expect({ uri, status: r.status }).toEqual({ uri, status: 400 });
      expect(r.json.error_id).toBe("invalid-data");
      expect(r.json.resource).toBe("oidc_clients");
      expect(r.json.details[field].constraint_id).toBe(constraint);
      expect(r.json.details[field].message).toBeString();
    }
    const tooLong = await create({ backchannel_logout_uri: `https://rp.example.com/${"a".repeat(2100)}` });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.details.backchannel_logout_uri).toBeDefined();
    const notBool = await create({ backchannel_logout_session_required: "yes" });
    expect(notBool.status).toBe(400);
    expect(notBool.json.details.backchannel_logout_session_required).toBeDefined();
    expect((await t.request("GET", "/0.1/oidc/clients", { token: admin })).json.total).toBe(before);
    // An update is checked the same way.
    const ok = await create({});
    const put = await t.request("PUT", `/0.1/oidc/clients/${ok.json.client_id}`, {
      token: admin,
      body: { name: "rp", redirect_uris: [REDIRECT], backchannel_logout_uri: "https://192.168.1.1/bc" },
    });
    expect(put.status).toBe(400);
    expect(put.json.details.backchannel_logout_uri.constraint_id).toBe("outbound_url");
  });

  test("discovery without public_url: front-channel offered, back-channel not (a logout token names the configured issuer)", async () => {
    const meta = (await get().request("GET", "/0.1/oidc/.well-known/openid-configuration")).json;
    expect(meta.backchannel_logout_supported).toBe(false);
    expect(meta.backchannel_logout_session_supported).toBe(false);
    expect(meta.frontchannel_logout_supported).toBe(true);
    expect(meta.frontchannel_logout_session_supported).toBe(true);
  });
});

describe("logout metadata from a registration body", () => {
  test("types checked field by field; absent fields stay absent", () => {
    expect(logoutMetadataFromJson({})).toEqual({});
    expect(
      logoutMetadataFromJson({
        backchannel_logout_uri: "https://rp.example.com/bc",
        backchannel_logout_session_required: true,
        frontchannel_logout_uri: null,
        other: 1,
      }),
    ).toEqual({
      backchannel_logout_uri: "https://rp.example.com/bc",
      backchannel_logout_session_required: true,
      frontchannel_logout_uri: null,
    });
    for (const body of [
      { backchannel_logout_uri: 1 },
      { frontchannel_logout_uri: ["https://rp.example.com/fc"] },
      { backchannel_logout_session_required: "true" },
      { frontchannel_logout_session_required: null },
    ]) {
      const field = Object.keys(body)[0]!;
      try {
        logoutMetadataFromJson(body);
        throw new Error("accepted");
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidData);
        expect(Object.keys((e as InvalidData).details as object)).toEqual([field]);
      }
    }
  });
});
