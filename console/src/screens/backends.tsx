// The tenant's LDAP directory and SAML identity provider, with the SP metadata to download.
import { useState } from "preact/hooks";
import { TesseraError } from "../api.ts";
import { BASE_URL } from "../auth.ts";
import { Busy, ErrorBox, Field, Notice, Screen, confirmAction, useAction, useAsync } from "../ui.tsx";
import type { ScreenProps } from "./index.tsx";

const LDAP_FIELDS = [
  ["host", "Host", "ldap.example.com"],
  ["port", "Port", "389, or 636 for LDAPS"],
  ["protocol_security", "Security", "none, ldaps or tls (STARTTLS)"],
  ["bind_dn", "Bind DN", "The account Tessera searches with; empty = anonymous"],
  ["bind_password", "Bind password", "Left empty, the stored one is kept"],
  ["user_base_dn", "User base DN", "ou=people,dc=example,dc=com"],
  ["user_login_attribute", "Login attribute", "uid"],
  ["user_email_attribute", "Email attribute", "mail"],
  ["search_filters", "Search filter", "Optional, e.g. (objectClass=person)"],
] as const;
type LdapKey = (typeof LDAP_FIELDS)[number][0];

export function LdapScreen({ api }: ScreenProps) {
  const current = useAsync(() => api.ops.getBackendLdap() as Promise<Record<string, unknown>>, []);
  return (
    <Screen title="LDAP" intro="The directory users of this tenant sign in against.">
      {current.loading && <Busy />}
      <ErrorBox error={current.error} />
      {current.data && <LdapForm api={api} current={current.data} reload={current.reload} key="ldap" />}
    </Screen>
  );
}

function LdapForm({
  api,
  current,
  reload,
}: {
  api: ScreenProps["api"];
  current: Record<string, unknown>;
  reload: () => void;
}) {
  const act = useAction();
  const [form, setForm] = useState<Record<LdapKey, string>>(
    Object.fromEntries(LDAP_FIELDS.map(([k]) => [k, current[k] == null ? "" : String(current[k])])) as Record<
      LdapKey,
      string
    >,
  );
  const configured = current.host != null;
  const save = async (e: Event) => {
    e.preventDefault();
    const body: Record<string, unknown> = {};
    for (const [k] of LDAP_FIELDS) if (form[k] !== "") body[k] = k === "port" ? Number(form[k]) : form[k];
    if (await act.run(() => api.ops.updateBackendLdap({ body: body as never }), "Saved.")) reload();
  };
  const remove = async () => {
    if (
      !(await confirmAction(
        "Remove the LDAP configuration?",
        <p>Users of this tenant can no longer sign in with their directory password.</p>,
        "Remove",
      ))
    )
      return;
    if (await act.run(() => api.ops.deleteBackendLdap(), "Removed.")) reload();
  };
  const may = api.can("auth.backends.ldap.update");
  return (
    <form class="panel" onSubmit={(e) => void save(e)} aria-label="LDAP configuration">
      <ErrorBox error={act.error} />
      {act.notice && <Notice text={act.notice} />}
      <p>{configured ? "A directory is configured." : "No directory is configured."}</p>
      {LDAP_FIELDS.map(([k, label, hint]) => (
        <Field
          key={k}
          label={label}
          name={k}
          hint={hint}
          type={k === "bind_password" ? "password" : k === "port" ? "number" : "text"}
          value={form[k]}
          onInput={(v) => setForm({ ...form, [k]: v })}
          error={act.error}
        />
      ))}
      <div class="actions">
        {may && (
          <button type="submit" class="primary" disabled={act.busy}>
            Save
          </button>
        )}
        {configured && api.can("auth.backends.ldap.delete") && (
          <button type="button" class="danger" onClick={() => void remove()}>
            Remove
          </button>
        )}
      </div>
    </form>
  );
}

interface SamlConfig {
  domain_uuid: string;
  entity_id: string;
  acs_url: string;
}

export function SamlScreen({ api }: ScreenProps) {
  const data = useAsync(async () => {
    const res = await api.raw("GET", "/backends/saml");
    const config = res.status === 404 ? null : res.ok ? ((await res.json()) as SamlConfig) : null;
    if (!res.ok && res.status !== 404) await api.ops.getBackendSaml(); // throws with the API's error body
    const domains = await api.ops
      .listTenantDomains({ params: { path: { tenant_uuid: api.tenant } } })
      .then((r) => (r as unknown as { items: Array<{ uuid: string; name: string }> }).items)
      .catch(() => []);
    const template = await api.ops.getBackendSamlAcsUrlTemplate().catch(() => null);
    return { config, domains, template: template as { acs_url?: string } | null };
  }, []);
  return (
    <Screen title="SAML" intro="The SAML identity provider users of this tenant sign in with.">
      {data.loading && <Busy />}
      <ErrorBox error={data.error} />
      {data.data && (
        // One form for the whole visit: remounting it when the first save creates the configuration
        // would drop the "Saved." notice the moment it appears.
        <SamlForm api={api} {...data.data} reload={data.reload} />
      )}
    </Screen>
  );
}

function SamlForm(props: {
  api: ScreenProps["api"];
  config: SamlConfig | null;
  domains: Array<{ uuid: string; name: string }>;
  template: { acs_url?: string } | null;
  reload: () => void;
}) {
  const { api, config } = props;
  const act = useAction();
  const [form, setForm] = useState({
    domain_uuid: config?.domain_uuid ?? props.domains[0]?.uuid ?? "",
    entity_id: config?.entity_id ?? "",
    acs_url: config?.acs_url ?? props.template?.acs_url ?? "",
  });
  const [file, setFile] = useState<File | null>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    const body = new FormData();
    for (const [k, v] of Object.entries(form)) body.set(k, v);
    if (file) body.set("metadata", file);
    await act
      .run(async () => {
        const res = await fetch(`${BASE_URL}/0.1/backends/saml`, {
          method: config ? "PUT" : "POST",
          headers: { "X-Auth-Token": api.me.token, "Wazo-Tenant": api.tenant },
          body,
        });
        if (!res.ok) {
          // The multipart form goes by plain fetch; its error still reads like every other screen's.
          throw new TesseraError(res.status, await res.json().catch(() => undefined), "saveBackendSaml");
        }
      }, "Saved.")
      .then((ok) => ok && props.reload());
  };
  const download = async () => {
    await act.run(async () => {
      const res = await api.raw("GET", "/backends/saml/sp_metadata");
      if (!res.ok) throw new Error(`The SP metadata could not be read (${res.status}).`);
      const url = URL.createObjectURL(new Blob([await res.text()], { type: "application/samlmetadata+xml" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = "tessera-sp-metadata.xml";
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    }, "SP metadata downloaded.");
  };
  const remove = async () => {
    if (
      !(await confirmAction(
        "Remove the SAML configuration?",
        <p>Users of this tenant can no longer sign in through the identity provider.</p>,
        "Remove",
      ))
    )
      return;
    if (await act.run(() => api.ops.deleteBackendSaml(), "Removed.")) props.reload();
  };
  const may = api.can(config ? "auth.backends.saml.update" : "auth.backends.saml.create");
  return (
    <form class="panel" onSubmit={(e) => void save(e)} aria-label="SAML configuration">
      <ErrorBox error={act.error} />
      {act.notice && <Notice text={act.notice} />}
      <p>{config ? "An identity provider is configured." : "No identity provider is configured."}</p>
      <div class="field">
        <label for="saml-domain">Domain</label>
        <select
          id="saml-domain"
          name="domain_uuid"
          value={form.domain_uuid}
          onChange={(e) => setForm({ ...form, domain_uuid: (e.currentTarget as HTMLSelectElement).value })}
        >
          {props.domains.length === 0 && <option value="">This tenant has no domain name</option>}
          {props.domains.map((d) => (
            <option key={d.uuid} value={d.uuid}>
              {d.name}
            </option>
          ))}
        </select>
      </div>
      <Field
        label="SP entity ID"
        name="entity_id"
        value={form.entity_id}
        onInput={(v) => setForm({ ...form, entity_id: v })}
        error={act.error}
      />
      <Field
        label="ACS URL"
        name="acs_url"
        value={form.acs_url}
        onInput={(v) => setForm({ ...form, acs_url: v })}
        error={act.error}
      />
      <div class="field">
        <label for="saml-metadata">IdP metadata (XML file){config ? ", to replace it" : ""}</label>
        <input
          id="saml-metadata"
          type="file"
          accept=".xml,application/xml,text/xml"
          onChange={(e) => setFile((e.currentTarget as HTMLInputElement).files?.[0] ?? null)}
        />
        {act.error?.fields.metadata && <small class="field-error">{act.error.fields.metadata}</small>}
      </div>
      <div class="actions">
        {may && (
          <button type="submit" class="primary" disabled={act.busy}>
            Save
          </button>
        )}
        {config && (
          <button type="button" onClick={() => void download()}>
            Download the SP metadata
          </button>
        )}
        {config && api.can("auth.backends.saml.delete") && (
          <button type="button" class="danger" onClick={() => void remove()}>
            Remove
          </button>
        )}
      </div>
    </form>
  );
}
