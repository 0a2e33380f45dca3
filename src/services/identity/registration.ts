// Self-registration (wazo-auth's user registration): a new tenant under the master tenant, an enabled user
// with an unconfirmed main address, and the confirmation mail — all or nothing (a failed mail
// leaves neither tenant nor user behind).
import { mailLocale } from "../i18n/negotiate.ts";
import type { AppContext } from "../../boot/context.ts";
import { inTransaction } from "../../db/tx.ts";
import type { ConnectionParams } from "../../plugins/email-types.ts";
import { mailConfirmation } from "./emails.ts";
import { createTenant, tenantAudit } from "./tenants.ts";
import { createUser, userAudit, type UserJson } from "./users.ts";
import { recordAudit } from "../audit/record.ts";

export interface Registration {
  username: string;
  password: string;
  firstname?: string | null;
  lastname?: string | null;
  email_address: string;
}

export async function registerUser(app: AppContext, input: Registration, conn: ConnectionParams): Promise<UserJson> {
  return inTransaction(app, async (tx) => {
    const tenant = await createTenant(app, tx, null, app.topTenantUuid, { name: input.username });
    const user = await createUser(
      app,
      tx,
      tenant.uuid,
      {
        username: input.username,
        password: input.password,
        firstname: input.firstname,
        lastname: input.lastname,
        email_address: input.email_address,
        purpose: "user",
        authentication_method: "default",
      },
      false,
    );
    await mailConfirmation(app, tx, user.emails[0]!, user.username, conn, mailLocale(app.config, user));
    // Nobody authenticated: the entries have no actor (registration is open to anyone, §6.9).
    await recordAudit(
      app,
      tx,
      null,
      tenantAudit("tenant.create", tenant.uuid, null, tenant as unknown as Record<string, unknown>),
      userAudit("user.register", user, null, user),
    );
    return user;
  });
}
