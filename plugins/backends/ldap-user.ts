// The `ldap_user` backend (wazo-auth's backends, identity-provider plugins): the password is checked by the directory
// of the tenant the login names (`domain_name` or `tenant_id`), and the token goes to that tenant's
// user whose confirmed email address (or username) is the directory entry's email. ACL and metadata
// are computed as for wazo_user, from that user; the token metadata also carries `username` = the
// email, as wazo-auth's does. Refresh-token logins reach getAcl/getMetadata with the email directly.
import { readFileSync } from "node:fs";
import type { BackendPlugin, LoginArgs, PluginDependencies, PluginServices } from "../../src/plugins/sdk.ts";
import { authenticateInDirectory, directoryUrl, type DirectoryOptions } from "./ldap-directory.ts";

export default class LdapUserBackend implements BackendPlugin {
  private services!: PluginServices;
  private options!: DirectoryOptions;

  load(deps: PluginDependencies): void {
    this.services = deps.services;
    const { tls_ca_file: caFile, timeout } = deps.services.serviceConfig.ldap;
    // A CA file that cannot be read is a configuration error: refuse to start the backend rather
    // than fall back to anything weaker.
    this.options = { timeout, extraCa: caFile ? [readFileSync(caFile, "utf8")] : [] };
  }

  async verifyPassword(login: string, password: string, args: LoginArgs): Promise<boolean> {
    const log = this.services.log;
    const tenantUuid = await this.services.findLoginTenant(args.body);
    if (!tenantUuid) {
      log.info("ldap login refused: no such tenant", {
        domain_name: args.body.domain_name,
        tenant_id: args.body.tenant_id,
      });
      return false;
    }
    const config = await this.services.findLdapConfig(tenantUuid);
    if (!config) {
      log.info("ldap login refused: the tenant has no LDAP configuration", { tenant_uuid: tenantUuid });
      return false;
    }
    let email: string;
    try {
      email = await authenticateInDirectory(config, login, password, this.options);
    } catch (e) {
      log.info("ldap login refused by the directory", {
        tenant_uuid: tenantUuid,
        url: directoryUrl(config),
        login,
        reason: (e as Error).message,
      });
      return false;
    }
    const user = await this.services.findUserByLogin(email);
    if (!user || user.tenantUuid !== tenantUuid) {
      log.info("ldap login refused: no user of the tenant has the directory's email", {
        tenant_uuid: tenantUuid,
        email,
      });
      return false;
    }
    args.pbx_user_uuid = user.uuid;
    args.user_email = email;
    args.real_login = email;
    return true;
  }

  async getAcl(login: string, args: LoginArgs): Promise<string[]> {
    const user = await this.services.findUserByLogin(this.email(login, args));
    return [...args.acl, ...(user ? await this.services.userAcl(user.uuid) : [])];
  }

  async getMetadata(login: string, args: LoginArgs): Promise<Record<string, unknown>> {
    const email = this.email(login, args);
    return { username: email, ...(await this.services.userMetadata(email, args)) };
  }

  async getPersistentMetadata(_login: string, _args: LoginArgs): Promise<Record<string, unknown>> {
    return {};
  }

  private email(login: string, args: LoginArgs): string {
    return typeof args.user_email === "string" ? args.user_email : login;
  }
}
