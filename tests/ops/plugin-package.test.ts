// A plugin from a separate npm package: installed beside Tessera (node_modules/<package> and
// node_modules/tessera, as an application that depends on both has them), importing only the plugin
// SDK through its peer dependency, and named in the configuration by its installed path. It loads,
// logs its method's users in through the bound services, and refuses with the SDK's errors.
import { afterAll, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { eq } from "drizzle-orm";
import { users } from "../../src/db/schema.ts";
import { describeEachDb } from "../helpers/app.ts";
import { createUserRow, tokenFor } from "../helpers/fixtures.ts";

const install = mkdtempSync(join(tmpdir(), "tessera-plugin-package-"));
const modules = join(install, "node_modules");
mkdirSync(modules);
symlinkSync(resolve(import.meta.dir, "../.."), join(modules, "tessera"), "dir");
cpSync(join(import.meta.dir, "../fixtures", "plugin-package"), join(modules, "tessera-plugin-header-sso"), {
  recursive: true,
});
afterAll(() => rmSync(install, { recursive: true, force: true }));

const config = {
  plugins: {
    idp: {
      header_sso: { module: join(modules, "tessera-plugin-header-sso"), priority: 5, config: { secret: "pk9" } },
    },
  },
};

describeEachDb(
  "a plugin from its own package",
  (get) => {
    test("it loads and is listed as an identity provider", async () => {
      const { token } = await tokenFor(get().app, { acl: ["auth.idp.read", "auth.status.read"] });
      expect((await get().request("GET", "/0.1/idp", { token })).json.items).toContain("header_sso");
      const status = await get().request("GET", "/0.1/status", { token });
      expect(status.json.plugins.header_sso).toMatchObject({ kind: "idp", status: "ok" });
    });

    test("it signs in a user of its method through the SDK's services, and refuses others", async () => {
      const t = get();
      const uuid = await createUserRow(t.app, { username: "pkguser", password: "pw" });
      await t.app.db.update(users).set({ authenticationMethod: "header_sso" }).where(eq(users.uuid, uuid));
      const login = (header: string) =>
        t.request("POST", "/0.1/token", { body: {}, headers: { "X-Header-Sso": header } });
      const ok = await login("pk9:pkguser");
      expect(ok.status).toBe(200);
      expect(ok.json.data.auth_id).toBe(uuid);
      expect((await login("wrong:pkguser")).status).toBe(401);
      expect((await login("pk9:nobody")).status).toBe(401);
    });
  },
  { config },
);
