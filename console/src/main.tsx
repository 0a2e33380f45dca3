// The console's shell: sign-in, the header (tenant in which to act, sign-out), the navigation
// (only screens the token's ACL can read) and hash routing (`#/users/{uuid}`), so the service
// serves one page.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Api, errorView, loadMe, type ErrorView, type Me } from "./api.ts";
import { completeSignIn, forgetToken, isCallback, signIn, storedToken } from "./auth.ts";
import { Busy, ConfirmHost, ErrorBox } from "./ui.tsx";
import { SCREENS, screenFor } from "./screens/index.tsx";

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignedOut({ error, message }: { error?: ErrorView | null; message?: string }) {
  return (
    <main id="main" class="signed-out">
      <h1>Tessera console</h1>
      {message && <p role="status">{message}</p>}
      <ErrorBox error={error} />
      <p>Sign in with your Tessera account to administer tenants, users and access.</p>
      <button type="button" class="primary" onClick={() => void signIn()}>
        Sign in
      </button>
    </main>
  );
}

function Shell({ me, onSignOut }: { me: Me; onSignOut: () => void }) {
  const hash = useHash();
  const [tenant, setTenant] = useState(sessionStorage.getItem("tessera-console.tenant") ?? me.tenantUuid);
  const [tenants, setTenants] = useState<Array<{ uuid: string; name: string }>>([]);
  const [menuOpen, setMenuOpen] = useState(false);
  const [username, setUsername] = useState("");
  // GET /0.1/status answers top-tenant administrators only, whatever the ACL (a tenant administrator
  // holding auth.# is refused): its screen shows once the token is known to be of the top tenant.
  const [topTenant, setTopTenant] = useState<boolean | null>(null);
  const api = new Api(me, tenant);
  useEffect(() => {
    if (!api.can("auth.status.read")) {
      setTopTenant(false);
      return;
    }
    new Api(me, me.tenantUuid).ops
      .getStatus()
      .then(() => setTopTenant(true))
      .catch(() => setTopTenant(false));
  }, [me]);
  useEffect(() => {
    // The token names its user by uuid only: the header shows the username (GET /0.1/users/{uuid});
    // the uuid stays in the title. Without the right to read oneself, the uuid is all there is.
    new Api(me, me.tenantUuid).ops
      .getUser({ params: { path: { user_uuid: me.userUuid } } })
      .then((u) => setUsername(u.username ?? ([u.firstname, u.lastname].filter(Boolean).join(" ") || "")))
      .catch(() => undefined);
  }, [me]);
  useEffect(() => {
    if (!api.can("auth.tenants.read")) return;
    new Api(me, me.tenantUuid).ops
      .listTenants({ params: { query: { recurse: true, limit: 500, order: "name" } } })
      .then((p) => setTenants(p.items as Array<{ uuid: string; name: string }>))
      .catch(() => setTenants([]));
  }, [me]);
  const chooseTenant = (uuid: string) => {
    sessionStorage.setItem("tessera-console.tenant", uuid);
    setTenant(uuid);
  };
  const path = hash.replace(/^#\/?/, "") || "users";
  const found = screenFor(path);
  // Still unknown (null): a top-tenant screen opened by its address waits for the answer.
  const hidden = Boolean(found?.topTenantOnly && topTenant === false);
  const current = hidden ? undefined : found;
  const visible = SCREENS.filter((s) => api.can(s.acl) && (!s.topTenantOnly || topTenant === true));
  return (
    <>
      {/* biome-ignore lint/a11y/useValidAnchor: a real link (#main) that also moves focus, as a skip link must */}
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById("main")?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Tessera console</span>
        <div class="who">
          {tenants.length > 0 && (
            <label>
              <span class="tenant-label" aria-hidden="true">
                Tenant
              </span>
              <select
                aria-label="Tenant"
                value={tenant}
                onChange={(e) => chooseTenant((e.currentTarget as HTMLSelectElement).value)}
              >
                {tenants.map((t) => (
                  <option key={t.uuid} value={t.uuid}>
                    {t.name}
                  </option>
                ))}
              </select>
            </label>
          )}
          <span class="user" title={`User ${me.userUuid}`}>
            {username || me.name}
          </span>
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <div class="layout">
        <nav class="side" aria-label="Screens">
          <button
            type="button"
            class="menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="screen-list"
            onClick={() => setMenuOpen(!menuOpen)}
          >
            Menu
          </button>
          <ul id="screen-list" class={menuOpen ? "open" : ""}>
            {visible.map((s) => (
              <li key={s.path}>
                <a
                  href={`#/${s.path}`}
                  aria-current={current?.path === s.path ? "page" : undefined}
                  onClick={() => setMenuOpen(false)}
                >
                  {s.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1}>
          {current ? (
            <current.view api={api} path={path} key={`${tenant}:${path}`} />
          ) : hidden ? (
            <p role="alert">This screen is for the administrators of the top tenant.</p>
          ) : (
            <p role="alert">There is no such screen.</p>
          )}
        </main>
      </div>
      <ConfirmHost />
    </>
  );
}

function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState<ErrorView | null>(null);
  const [message, setMessage] = useState("");
  const [loading, setLoading] = useState(true);
  useEffect(() => {
    (async () => {
      if (isCallback()) await completeSignIn();
      const stored = storedToken();
      if (stored) setMe(await loadMe(stored.token));
    })()
      .catch((e) => {
        forgetToken();
        setError(errorView(e));
      })
      .finally(() => setLoading(false));
  }, []);
  if (loading) return <Busy label="Signing in…" />;
  if (!me) return <SignedOut error={error} message={message} />;
  const signOut = async () => {
    // The session ends on the server too (DELETE /0.1/token/{token}), not only in this tab.
    await new Api(me, me.tenantUuid).client.revokeToken(me.token).catch(() => undefined);
    forgetToken();
    sessionStorage.removeItem("tessera-console.tenant");
    setMe(null);
    setMessage("You are signed out.");
  };
  return <Shell me={me} onSignOut={() => void signOut()} />;
}

render(<App />, document.getElementById("app")!);
