// `tessera tenants add-admin TENANT --username NAME`: the customer's administrator in one step — a
// user of TENANT holding the stock `tessera_tenant_admin` policy (`--role auditor`: the read-only
// `tessera_auditor`). The grant rule applies as through the API: the calling administrator must
// hold what the policy grants; refused, the user just created is removed again.
import { defineCommand } from "citty";
import { CliFailure, EXIT, output } from "./output.ts";
import { newPassword } from "./relations.ts";
import { call, remoteArgs, withClient } from "./remote.ts";

const ROLE_POLICIES: Record<string, string> = { admin: "tessera_tenant_admin", auditor: "tessera_auditor" };

export const tenantAddAdminCommand = defineCommand({
  meta: {
    name: "add-admin",
    description:
      "Create a user in a tenant holding the stock tenant-administrator policy (or --role auditor: read-only)",
  },
  args: {
    customer: { type: "positional", description: "The tenant (UUID or slug)", required: true, valueHint: "TENANT" },
    username: { type: "string", description: "Its login name", required: true, valueHint: "NAME" },
    password: {
      type: "string",
      description: "Its password (better: TESSERA_NEW_PASSWORD, or standard input)",
      valueHint: "PASSWORD",
    },
    role: {
      type: "string",
      description: "admin (tessera_tenant_admin) or auditor (tessera_auditor)",
      default: "admin",
    },
    ...remoteArgs,
  },
  async run({ args }) {
    const policy = ROLE_POLICIES[args.role];
    if (!policy)
      throw new CliFailure(`tessera tenants add-admin: --role is admin or auditor, not ${args.role}`, EXIT.usage);
    const password = await newPassword(args.password, "tessera tenants add-admin");
    await withClient(args, async (client) => {
      const inTenant = client.withTenant(args.customer);
      const user = (await call(inTenant, "createUser", { body: { username: args.username, password } })) as {
        uuid: string;
      };
      const path = { user_uuid: user.uuid };
      try {
        await call(inTenant, "addUserPolicy", { params: { path: { ...path, policy } } });
      } catch (e) {
        await call(inTenant, "deleteUser", { params: { path } }).catch(() => {});
        throw e;
      }
      output(args, { ...((await call(inTenant, "getUser", { params: { path } })) as object), policy });
    });
  },
});
