// One login's conversation with a tenant's directory (wazo-auth's identity-provider plugins steps 3–6), with
// ldapts: connect (ldaps://, STARTTLS or plain; certificates always verified), find the user's DN
// (service-account search, or a DN built from the login), bind as the user, read its email. Every
// step has a timeout and the whole conversation a deadline, so a dead, slow or silent directory
// costs a login at most `timeout` seconds and never holds a request.
import { isIP } from "node:net";
import { rootCertificates, type ConnectionOptions } from "node:tls";
import type { Client } from "ldapts";
import {
  DEFAULT_SEARCH_FILTER,
  escapeDnValue,
  fillSearchFilter,
  type LdapDirectoryConfig as LdapConfigRow,
} from "../../src/plugins/sdk.ts";

export interface DirectoryOptions {
  /** Seconds for the TCP connect, each operation, and the whole conversation. */
  timeout: number;
  /** Extra trusted certificate authorities (PEM), beside the system ones. */
  extraCa: string[];
}

/** Why a login was refused by the directory (logged, never shown to the caller). */
export class DirectoryRefusal extends Error {}

export function directoryUrl(config: LdapConfigRow): string {
  const scheme = config.protocolSecurity === "ldaps" ? "ldaps" : "ldap";
  const host = isIP(config.host) === 6 ? `[${config.host}]` : config.host.replace(/^\[|\]$/g, "");
  return `${scheme}://${host}:${config.port}`;
}

function tlsOptions(config: LdapConfigRow, opts: DirectoryOptions): ConnectionOptions {
  const host = config.host.replace(/^\[|\]$/g, "");
  return {
    ca: [...rootCertificates, ...opts.extraCa],
    rejectUnauthorized: true,
    host,
    // SNI takes names only; an address is still checked against the certificate's IP entries.
    ...(isIP(host) ? {} : { servername: host }),
    minVersion: "TLSv1.2",
  };
}

function firstValue(entry: Record<string, unknown>, attribute: string): string | null {
  const key = Object.keys(entry).find((k) => k.toLowerCase() === attribute.toLowerCase());
  const value = key ? entry[key] : undefined;
  const first = Array.isArray(value) ? value[0] : value;
  if (first === undefined || first === null) return null;
  const text = Buffer.isBuffer(first) ? first.toString("utf8") : String(first);
  return text.trim() === "" ? null : text;
}

async function userDnAndEmail(
  client: Client,
  config: LdapConfigRow,
  login: string,
): Promise<{ dn: string; email: string | null }> {
  if (config.bindDn && config.bindPassword) {
    await client.bind(config.bindDn, config.bindPassword).catch((e: Error) => {
      throw new DirectoryRefusal(`the service account bind failed: ${e.message}`);
    });
    const filter = fillSearchFilter(config.searchFilters || DEFAULT_SEARCH_FILTER, {
      username: login,
      user_login_attribute: config.userLoginAttribute,
      user_email_attribute: config.userEmailAttribute,
    });
    // Two at most: enough to see that a login is ambiguous (ldapts returns the entries it got when
    // the size limit is reached instead of failing).
    const { searchEntries } = await client.search(config.userBaseDn, {
      scope: "sub",
      filter,
      attributes: [config.userEmailAttribute],
      sizeLimit: 2,
      timeLimit: 2,
    });
    if (searchEntries.length > 1) throw new DirectoryRefusal("more than one directory entry matches the login");
    const entry = searchEntries[0];
    if (!entry) throw new DirectoryRefusal("no directory entry matches the login");
    return { dn: entry.dn, email: firstValue(entry, config.userEmailAttribute) };
  }
  return { dn: `${config.userLoginAttribute}=${escapeDnValue(login)},${config.userBaseDn}`, email: null };
}

async function converse(
  client: Client,
  config: LdapConfigRow,
  login: string,
  password: string,
  opts: DirectoryOptions,
): Promise<string> {
  if (config.protocolSecurity === "tls") await client.startTLS(tlsOptions(config, opts));
  const user = await userDnAndEmail(client, config, login);
  await client.bind(user.dn, password).catch((e: Error) => {
    throw new DirectoryRefusal(`the user bind failed: ${e.message}`);
  });
  let email = user.email;
  if (!email) {
    const { searchEntries } = await client.search(user.dn, {
      scope: "base",
      attributes: [config.userEmailAttribute],
      sizeLimit: 1,
      timeLimit: 2,
    });
    email = searchEntries[0] ? firstValue(searchEntries[0], config.userEmailAttribute) : null;
  }
  if (!email) throw new DirectoryRefusal("the directory entry has no email address");
  return email.toLowerCase();
}

/**
 * The user's email, lower-cased, when `login`/`password` bind in the tenant's directory; throws
 * (DirectoryRefusal, a TLS or network error, or the deadline) otherwise.
 */
export async function authenticateInDirectory(
  config: LdapConfigRow,
  login: string,
  password: string,
  opts: DirectoryOptions,
): Promise<string> {
  // An empty password would be an unauthenticated bind, which directories accept (RFC 4513 §5.1.2).
  if (!login || !password) throw new DirectoryRefusal("empty login or password");
  const ms = Math.round(opts.timeout * 1000);
  const { Client } = await import("ldapts"); // loaded on the first LDAP login, not at every start
  const client = new Client({
    url: directoryUrl(config),
    timeout: ms,
    connectTimeout: ms,
    tlsOptions: config.protocolSecurity === "ldaps" ? tlsOptions(config, opts) : undefined,
    strictDN: false,
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DirectoryRefusal(`no answer within ${opts.timeout} s`)), ms);
  });
  try {
    return await Promise.race([converse(client, config, login, password, opts), deadline]);
  } finally {
    clearTimeout(timer);
    // Closing may itself wait on a silent server: never let it hold the login.
    void client.unbind().catch(() => {});
  }
}
