// The tenant's upstream OpenID providers (docs/federation.md): list, add (the redirect URI to register
// at the provider is shown at once), edit (an empty secret keeps the stored one), remove. The API
// fetches the provider's discovery document on every save, so a typo in the issuer is refused here
// with the API's reason rather than found at the first sign-in.
import { useState } from "preact/hooks";
import { Check, ErrorBox, Field, Notice, PagedList, Screen, confirmAction, reloadLists, useAction } from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

interface Provider {
  uuid: string;
  name: string;
  display_name: string;
  preset: string;
  issuer: string;
  client_id: string;
  scopes: string[];
  provisioning: string;
  upstream_logout: boolean;
  trust_amr: boolean;
  redirect_uri: string;
  post_logout_redirect_uri: string | null;
  backchannel_logout_uri: string;
}

const PRESETS = [
  ["oidc", "Any OpenID provider (issuer below)"],
  ["google", "Google"],
  ["entra", "Microsoft Entra ID"],
  ["github", "GitHub (plain OAuth 2.0)"],
] as const;

const PROVISIONING = [
  ["link", "link: only users already linked"],
  ["create", "create: a user is made at the first sign-in"],
  ["off", "off: sign-in disabled"],
] as const;

type Form = {
  name: string;
  display_name: string;
  preset: string;
  issuer: string;
  client_id: string;
  client_secret: string;
  scopes: string;
  provisioning: string;
  upstream_logout: boolean;
  trust_amr: boolean;
};

const EMPTY_FORM: Form = {
  name: "",
  display_name: "",
  preset: "oidc",
  issuer: "",
  client_id: "",
  client_secret: "",
  scopes: "",
  provisioning: "link",
  upstream_logout: false,
  trust_amr: false,
};

const formOf = (p: Provider): Form => ({
  name: p.name,
  display_name: p.display_name,
  preset: p.preset,
  issuer: p.issuer,
  client_id: p.client_id,
  client_secret: "",
  scopes: p.scopes.join(" "),
  provisioning: p.provisioning,
  upstream_logout: p.upstream_logout,
  trust_amr: p.trust_amr,
});

/** The request body: empty optional fields left out, so the API's defaults (and the stored secret) apply. */
function bodyOf(form: Form): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: form.name,
    display_name: form.display_name,
    preset: form.preset,
    client_id: form.client_id,
    provisioning: form.provisioning,
    upstream_logout: form.upstream_logout,
    // GitHub has no ID token, so no amr to trust (the API refuses it): the hidden box is not sent as checked.
    trust_amr: form.preset !== "github" && form.trust_amr,
  };
  if (form.issuer.trim()) body.issuer = form.issuer.trim();
  if (form.client_secret) body.client_secret = form.client_secret;
  const scopes = form.scopes.split(/\s+/).filter(Boolean);
  if (scopes.length) body.scopes = scopes;
  return body;
}

function Select(props: {
  id: string;
  label: string;
  name: string;
  value: string;
  options: ReadonlyArray<readonly [string, string]>;
  onChange: (v: string) => void;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select
        id={props.id}
        name={props.name}
        value={props.value}
        onChange={(e) => props.onChange((e.currentTarget as HTMLSelectElement).value)}
      >
        {props.options.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
}

function ProviderForm(props: {
  label: string;
  form: Form;
  setForm: (f: Form) => void;
  act: ReturnType<typeof useAction>;
  editing: boolean;
  onSubmit: () => void;
  onCancel: () => void;
}) {
  const { form, setForm, act } = props;
  const field = (
    key: Exclude<keyof Form, "upstream_logout" | "trust_amr">,
    label: string,
    extra: { hint?: string; required?: boolean; type?: string } = {},
  ) => (
    <Field
      label={label}
      name={key}
      value={form[key]}
      onInput={(v) => setForm({ ...form, [key]: v })}
      error={act.error}
      {...extra}
    />
  );
  return (
    <form
      class="panel"
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      <h2>{props.label}</h2>
      <ErrorBox error={act.error} />
      {field("name", "Name", { required: true, hint: "Short, unique in the tenant" })}
      {field("display_name", "Display name", { required: true, hint: 'The login page shows "Continue with …"' })}
      <Select
        id="upstream-preset"
        label="Kind"
        name="preset"
        value={form.preset}
        options={PRESETS}
        onChange={(v) => setForm({ ...form, preset: v })}
      />
      {field("issuer", "Issuer", {
        required: form.preset === "oidc",
        hint:
          form.preset === "oidc"
            ? "https://… — its discovery document is read from it"
            : form.preset === "github"
              ? "Optional: a GitHub Enterprise Server's base URL; github.com when empty"
              : "Optional: the kind's issuer is used when empty",
      })}
      {field("client_id", "Client ID", { required: true, hint: "As registered at the provider" })}
      {field("client_secret", "Client secret", {
        type: "password",
        required: !props.editing,
        hint: props.editing ? "Left empty, the stored one is kept" : "Stored, never shown again",
      })}
      {field("scopes", "Scopes", { hint: "Separated by spaces; default openid email profile" })}
      <Select
        id="upstream-provisioning"
        label="Accounts"
        name="provisioning"
        value={form.provisioning}
        options={PROVISIONING}
        onChange={(v) => setForm({ ...form, provisioning: v })}
      />
      <Check
        label="Signing out here signs out at the provider too"
        name="upstream_logout"
        checked={form.upstream_logout}
        onChange={(v) => setForm({ ...form, upstream_logout: v })}
      />
      {form.preset !== "github" && (
        <Check
          label="Trust the provider's multi-factor claim (amr)"
          name="trust_amr"
          checked={form.trust_amr}
          onChange={(v) => setForm({ ...form, trust_amr: v })}
        />
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={act.busy}>
          {props.editing ? "Save" : "Add"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function UpstreamProvidersScreen({ api }: ScreenProps) {
  const act = useAction();
  // null: no form; "new": the creation form; a uuid: that provider's edit form.
  const [editing, setEditing] = useState<string | null>(null);
  const [form, setForm] = useState<Form>(EMPTY_FORM);
  const [added, setAdded] = useState<Provider | null>(null);
  const path = (p: { uuid: string }) => ({ params: { path: { oidc_backend_uuid: p.uuid } } });
  const submit = async () => {
    const body = bodyOf(form);
    if (editing === "new") {
      await act.run(async () => {
        const p = (await api.ops.createBackendOidc({ body: body as never })) as unknown as Provider;
        setAdded(p);
        setEditing(null);
        setForm(EMPTY_FORM);
        reloadLists();
      }, `Added ${form.display_name}.`);
    } else if (editing) {
      const ok = await act.run(
        () => api.ops.updateBackendOidc({ ...path({ uuid: editing }), body: body as never }),
        `Saved ${form.display_name}.`,
      );
      if (ok) {
        setEditing(null);
        reloadLists();
      }
    }
  };
  const remove = async (p: Provider) => {
    if (
      !(await confirmAction(
        `Remove ${p.display_name}?`,
        <p>Its users can no longer sign in with it; their links to it go too.</p>,
        "Remove",
      ))
    )
      return;
    if (await act.run(() => api.ops.deleteBackendOidc(path(p)), `Removed ${p.display_name}.`)) reloadLists();
  };
  return (
    <Screen
      title="Upstream providers"
      intro="OpenID providers (a company's Entra ID, Google, Okta, Keycloak…) the users of this tenant sign in with."
    >
      <ErrorBox error={editing ? null : act.error} />
      {act.notice && <Notice text={act.notice} />}
      {added && (
        <div class="panel secret" role="status">
          <p>
            Register this redirect URI at {added.display_name} for the client ID you gave (its "callback" or "reply
            URL"):
          </p>
          <code class="block">{added.redirect_uri}</code>
          {added.preset !== "github" && (
            <>
              <p>Its back-channel logout URI, where the provider may say a session ended there:</p>
              <code class="block">{added.backchannel_logout_uri}</code>
            </>
          )}
          {added.post_logout_redirect_uri && (
            <>
              <p>Its post-logout redirect URI (signing out here signs out there too):</p>
              <code class="block">{added.post_logout_redirect_uri}</code>
            </>
          )}
        </div>
      )}
      {editing ? (
        <ProviderForm
          label={editing === "new" ? "New upstream provider" : "Change upstream provider"}
          form={form}
          setForm={setForm}
          act={act}
          editing={editing !== "new"}
          onSubmit={() => void submit()}
          onCancel={() => setEditing(null)}
        />
      ) : (
        api.can("auth.backends.oidc.create") && (
          <button
            type="button"
            class="primary"
            onClick={() => {
              setAdded(null);
              setForm(EMPTY_FORM);
              setEditing("new");
            }}
          >
            New upstream provider
          </button>
        )
      )}
      <PagedList<Provider>
        label="Upstream providers"
        load={(q) => api.ops.listBackendsOidc({ params: { query: q } }) as never}
        rowKey={(p) => p.uuid}
        columns={[
          { title: "Name", cell: (p) => p.display_name },
          { title: "Issuer", cell: (p) => <code>{p.issuer}</code> },
          { title: "Accounts", cell: (p) => p.provisioning },
          { title: "Redirect URI", cell: (p) => <code>{p.redirect_uri}</code> },
          {
            title: "Actions",
            cell: (p) => (
              <>
                {api.can("auth.backends.oidc.update") && (
                  <button
                    type="button"
                    aria-label={`Change ${p.display_name}`}
                    onClick={() => {
                      setAdded(null);
                      setForm(formOf(p));
                      setEditing(p.uuid);
                    }}
                  >
                    Change
                  </button>
                )}
                {api.can("auth.backends.oidc.delete") && (
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Remove ${p.display_name}`}
                    onClick={() => void remove(p)}
                  >
                    Remove
                  </button>
                )}
              </>
            ),
          },
        ]}
      />
    </Screen>
  );
}
