// Issue 22, item 4, as the attacker sees it: a stolen refresh token (an offline login made with a
// guessed or phished password) must not outlive the password reset, the password change or the
// disabling meant to end the attacker's access — nor come back when the user is re-enabled.
// `compatibility.refresh_token_revocation: keep` restores wazo-auth's older behaviour (sessions end, refresh
// tokens stay).
import { expect, test } from "bun:test";
import { listRecordedEvents } from "../../src/services/events.ts";
import { describeEachDb, type TestApp } from "../helpers/app.ts";
import { createTenantRow, createUserRow, tokenFor } from "../helpers/fixtures.ts";
import { basicAuth } from "../helpers/service-process.ts";

const uniq = () => crypto.randomUUID().slice(0, 8);

/** A victim whose password the attacker knows, and the attacker's offline login as the victim. */
async function stolen(t: TestApp) {
  const tenant = await createTenantRow(t.app);
  const username = `victim${uniq()}`;
  const user = await createUserRow(t.app, { tenantUuid: tenant, username, password: "guessed-pw" });
  const clientId = `attacker-${uniq()}`;
  const login = await t.request("POST", "/0.1/token", {
    body: { access_type: "offline", client_id: clientId },
    headers: basicAuth(username, "guessed-pw"),
  });
  expect(login.status).toBe(200);
  const admin = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: tenant })).token;
  return {
    tenant,
    username,
    user,
    clientId,
    admin,
    token: login.json.data.token as string,
    refreshToken: login.json.data.refresh_token as string,
  };
}

const refresh = (t: TestApp, s: { refreshToken: string; clientId: string }) =>
  t.request("POST", "/0.1/token", { body: { refresh_token: s.refreshToken, client_id: s.clientId } });
const valid = async (t: TestApp, token: string) => (await t.request("HEAD", `/0.1/token/${token}`)).status === 204;

async function refreshTokenDeleted(t: TestApp, user: string, clientId: string): Promise<boolean> {
  return (await listRecordedEvents(t.app.db)).some(
    (e) =>
      e.name === "auth_refresh_token_deleted" &&
      e.payload.data.user_uuid === user &&
      e.payload.data.client_id === clientId,
  );
}

/** An administrator's password reset of the stolen user: its status. */
async function adminReset(t: TestApp, s: { user: string; admin: string }): Promise<number> {
  const r = await t.request("POST", `/0.1/users/password/reset?user_uuid=${s.user}`, {
    token: s.admin,
    body: { password: "fresh-pw" },
  });
  return r.status;
}

describeEachDb("credential changes end refresh tokens", (get) => {
  test("a password reset by an administrator ends the attacker's sessions and refresh token, with events", async () => {
    const t = get();
    const s = await stolen(t);
    expect(await adminReset(t, s)).toBe(204);
    expect(await valid(t, s.token)).toBe(false);
    const r = await refresh(t, s);
    expect([r.status, r.json.error_id]).toEqual([401, "authentication-failed"]);
    expect(await refreshTokenDeleted(t, s.user, s.clientId)).toBe(true);
    expect((await t.request("GET", `/0.1/users/${s.user}/tokens`, { token: s.admin })).json.total).toBe(0);
    expect(
      (await t.request("POST", "/0.1/token", { body: {}, headers: basicAuth(s.username, "fresh-pw") })).status,
    ).toBe(200);
  });

  test("the user changing its own password ends every session (its own too) and every refresh token", async () => {
    const t = get();
    const s = await stolen(t);
    const own = (
      await tokenFor(t.app, { acl: ["auth.users.me.password.update"], tenantUuid: s.tenant, userUuid: s.user })
    ).token;
    expect(
      (
        await t.request("PUT", `/0.1/users/${s.user}/password`, {
          token: own,
          body: { old_password: "guessed-pw", new_password: "fresh-pw" },
        })
      ).status,
    ).toBe(204);
    expect([await valid(t, s.token), await valid(t, own)]).toEqual([false, false]);
    expect((await refresh(t, s)).status).toBe(401);
    expect(await refreshTokenDeleted(t, s.user, s.clientId)).toBe(true);
  });

  test("a disabled user's refresh token stays dead after it is re-enabled", async () => {
    const t = get();
    const s = await stolen(t);
    const put = (enabled: boolean) =>
      t.request("PUT", `/0.1/users/${s.user}`, { token: s.admin, body: { username: s.username, enabled } });
    expect((await put(false)).status).toBe(204);
    expect(await valid(t, s.token)).toBe(false);
    expect(await refreshTokenDeleted(t, s.user, s.clientId)).toBe(true);
    expect((await put(true)).status).toBe(204);
    expect((await refresh(t, s)).status).toBe(401);
    // the user itself logs in again with its password and gets a new refresh token
    const again = await t.request("POST", "/0.1/token", {
      body: { access_type: "offline", client_id: "phone" },
      headers: basicAuth(s.username, "guessed-pw"),
    });
    expect((await refresh(t, { refreshToken: again.json.data.refresh_token, clientId: "phone" })).status).toBe(200);
  });

  test("another tenant's administrator cannot end a user's refresh tokens by resetting or disabling it", async () => {
    const t = get();
    const s = await stolen(t);
    const outsider = (await tokenFor(t.app, { acl: ["auth.#"], tenantUuid: await createTenantRow(t.app) })).token;
    expect(
      (
        await t.request("POST", `/0.1/users/password/reset?user_uuid=${s.user}`, {
          token: outsider,
          body: { password: "x" },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await t.request("PUT", `/0.1/users/${s.user}`, {
          token: outsider,
          body: { username: s.username, enabled: false },
        })
      ).status,
    ).toBe(404);
    expect((await refresh(t, s)).status).toBe(200);
  });
});

describeEachDb(
  "compatibility.refresh_token_revocation: keep",
  (get) => {
    test("a password reset or a disabling ends the sessions only, as wazo-auth did", async () => {
      const t = get();
      const s = await stolen(t);
      expect(await adminReset(t, s)).toBe(204);
      expect(await valid(t, s.token)).toBe(false);
      expect((await refresh(t, s)).status).toBe(200);
      const put = (enabled: boolean) =>
        t.request("PUT", `/0.1/users/${s.user}`, { token: s.admin, body: { username: s.username, enabled } });
      await put(false);
      expect((await refresh(t, s)).status).toBe(401);
      await put(true);
      expect((await refresh(t, s)).status).toBe(200);
      expect(await refreshTokenDeleted(t, s.user, s.clientId)).toBe(false);
    });
  },
  { config: { compatibility: { refresh_token_revocation: "keep" } } },
);
