import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { samlSessions } from "../../src/db/schema.ts";
import { runCleanup } from "../../src/boot/jobs.ts";
import { describeEachDb } from "../helpers/app.ts";
import { adminToken } from "../helpers/fixtures.ts";
import { startTestIdp, type TestIdp } from "../helpers/saml-idp.ts";
import { APP_URL, fullLogin, samlTenant, samlUser, startLogin, type SamlTenant } from "../helpers/saml-tenant.ts";

describeEachDb("SAML logout and session lifetime", (get) => {
  let idp: TestIdp;
  let admin: string;
  let acme: SamlTenant;
  beforeAll(async () => {
    const t = get();
    idp = await startTestIdp("acme");
    admin = await adminToken(t.app);
    acme = await samlTenant(t, admin, idp, "acme");
    await samlUser(t, admin, idp, acme.tenant, "alice");
  });
  afterAll(async () => idp?.stop());

  const slsPath = (url: string) => {
    const u = new URL(url);
    return `${u.pathname}${u.search}`;
  };

  test("logout: the token ends, the IdP gets a signed LogoutRequest, its signed LogoutResponse lands on redirect_url?logged_out=true", async () => {
    const t = get();
    const { token } = await fullLogin(t, idp, acme.domain, "alice");
    const tok = token.json.data.token;
    const out = await t.request("GET", "/0.1/saml/logout", { token: tok });
    expect(out.status).toBe(200);
    expect(out.json.location.startsWith(`${idp.url}/slo?SAMLRequest=`)).toBe(true);
    expect((await t.request("GET", `/0.1/token/${tok}`)).status).toBe(404);
    const sls = await idp.browserLogout(out.json.location);
    expect(sls.startsWith(acme.acsUrl.replace("/acs", "/sls"))).toBe(true);
    const back = await t.request("GET", slsPath(sls));
    expect(back.status).toBe(302);
    expect(back.headers.get("Location")).toBe(`${APP_URL}?logged_out=true`);
    // the same LogoutResponse again: its pending logout is gone
    expect((await t.request("GET", slsPath(sls))).status).toBe(404);
  });

  test("logout takes the token from ?token= too; unknown or non-SAML tokens are 404", async () => {
    const t = get();
    const { token } = await fullLogin(t, idp, acme.domain, "alice");
    const viaQuery = await t.request("GET", `/0.1/saml/logout?token=${token.json.data.token}`);
    expect(viaQuery.status).toBe(200);
    expect((await t.request("GET", `/0.1/saml/logout?token=${token.json.data.token}`)).status).toBe(404);
    expect((await t.request("GET", "/0.1/saml/logout", { token: admin })).json).toMatchObject({
      error_id: "not-found",
      resource: "saml",
    });
  });

  test("/saml/sls refuses an unsigned or tampered LogoutResponse", async () => {
    const t = get();
    const { token } = await fullLogin(t, idp, acme.domain, "alice");
    const out = await t.request("GET", "/0.1/saml/logout", { token: token.json.data.token });
    const sls = new URL(await idp.browserLogout(out.json.location));
    const unsigned = new URL(sls);
    unsigned.searchParams.delete("Signature");
    const r1 = await t.request("GET", slsPath(unsigned.toString()));
    expect(r1.status).toBe(400);
    expect(r1.json.details.SAMLResponse.message).toContain("not signed");
    const forged = new URL(sls);
    const sig = sls.searchParams.get("Signature")!;
    forged.searchParams.set("Signature", `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`); // one character changed
    expect((await t.request("GET", slsPath(forged.toString()))).status).toBe(400);
    // the genuine one still works afterwards
    expect((await t.request("GET", slsPath(sls.toString()))).headers.get("Location")).toBe(
      `${APP_URL}?logged_out=true`,
    );
  });

  test("SAML sessions live in the database and are purged past their lifetime; a late IdP answer is refused", async () => {
    const t = get();
    const { sessionId, post } = await startLogin(t, idp, acme.domain, "alice");
    const old = new Date(Date.now() - (t.app.config.saml.saml_login_timeout_seconds + 5) * 1000);
    await t.app.db.update(samlSessions).set({ startTime: old }).where(eq(samlSessions.sessionId, sessionId));
    const late = await t.request("POST", new URL(post.action).pathname, {
      rawBody: new URLSearchParams({ SAMLResponse: post.SAMLResponse, RelayState: post.RelayState }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(late.headers.get("Location")).toBe(`${APP_URL}?login_failure_code=500`);
    // a completed login older than saml_session_lifetime_seconds is purged by the cleanup job
    const done = await startLogin(t, idp, acme.domain, "alice");
    await t.request("POST", new URL(done.post.action).pathname, {
      rawBody: new URLSearchParams({
        SAMLResponse: done.post.SAMLResponse,
        RelayState: done.post.RelayState,
      }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    const ancient = new Date(Date.now() - (t.app.config.saml.saml_session_lifetime_seconds + 5) * 1000);
    await t.app.db.update(samlSessions).set({ startTime: ancient }).where(eq(samlSessions.sessionId, done.sessionId));
    const { samlSessions: purged } = await runCleanup(t.app);
    expect(purged).toBeGreaterThanOrEqual(1);
    expect(await t.app.db.select().from(samlSessions).where(eq(samlSessions.sessionId, done.sessionId))).toEqual([]);
    expect((await t.request("POST", "/0.1/token", { body: { saml_session_id: done.sessionId } })).status).toBe(401);
  });
});
