// Every screen: its path, title, the ACL that makes it visible, and its view.
import type { FunctionComponent } from "preact";
import type { Api } from "../api.ts";
import { AuditScreen } from "./audit.tsx";
import { LdapScreen, SamlScreen } from "./backends.tsx";
import { ClientsScreen } from "./clients.tsx";
import { GroupScreen, GroupsScreen } from "./groups.tsx";
import { PoliciesScreen, PolicyScreen } from "./policies.tsx";
import { SessionsScreen } from "./sessions.tsx";
import { StatusScreen } from "./status.tsx";
import { TenantsScreen } from "./tenants.tsx";
import { UserScreen } from "./user.tsx";
import { UpstreamProvidersScreen } from "./upstream-providers.tsx";
import { UsersScreen } from "./users.tsx";
import { WebhooksScreen } from "./webhooks.tsx";

export interface ScreenProps {
  api: Api;
  path: string;
}

export interface ScreenDef {
  path: string;
  title: string;
  acl: string;
  view: FunctionComponent<ScreenProps>;
  /** Only for administrators of the top tenant (the route refuses others whatever their ACL). */
  topTenantOnly?: boolean;
  /** A detail screen (`users/{uuid}`), reached from its list. */
  detail?: FunctionComponent<ScreenProps>;
}

export const SCREENS: ScreenDef[] = [
  { path: "status", title: "Status", acl: "auth.status.read", view: StatusScreen, topTenantOnly: true },
  { path: "tenants", title: "Tenants", acl: "auth.tenants.read", view: TenantsScreen },
  { path: "users", title: "Users", acl: "auth.users.read", view: UsersScreen, detail: UserScreen },
  { path: "groups", title: "Groups", acl: "auth.groups.read", view: GroupsScreen, detail: GroupScreen },
  { path: "policies", title: "Policies", acl: "auth.policies.read", view: PoliciesScreen, detail: PolicyScreen },
  { path: "sessions", title: "Sessions", acl: "auth.sessions.read", view: SessionsScreen },
  { path: "ldap", title: "LDAP", acl: "auth.backends.ldap.read", view: LdapScreen },
  { path: "saml", title: "SAML", acl: "auth.backends.saml.read", view: SamlScreen },
  { path: "upstream", title: "Upstream providers", acl: "auth.backends.oidc.read", view: UpstreamProvidersScreen },
  { path: "clients", title: "OpenID Connect clients", acl: "auth.oidc.clients.read", view: ClientsScreen },
  { path: "webhooks", title: "Webhooks", acl: "auth.webhooks.read", view: WebhooksScreen },
  { path: "audit", title: "Audit trail", acl: "auth.audit.read", view: AuditScreen },
];

export function screenFor(path: string): (ScreenDef & { view: FunctionComponent<ScreenProps> }) | undefined {
  const [head, id] = path.split("/");
  const s = SCREENS.find((x) => x.path === head);
  if (!s) return undefined;
  if (id && s.detail) return { ...s, view: s.detail };
  return s;
}

/** The id in `#/users/{id}`. */
export const detailId = (path: string) => decodeURIComponent(path.split("/")[1] ?? "");
