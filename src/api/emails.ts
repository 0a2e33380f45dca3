// Email addresses and confirmation (wazo-auth's email API).
import { negotiateLocale, tenantDefaultLocale } from "../services/i18n/negotiate.ts";
import { z } from "zod";
import { RouteGroup } from "../http/route.ts";
import { emailText } from "../domain/strings.ts";
import { boolField, uuidParam } from "../domain/validate.ts";
import type { AppContext } from "../boot/context.ts";
import type { Caller } from "../domain/caller.ts";
import { confirmEmail, requestConfirmation, updateEmails } from "../services/identity/emails.ts";
import { getUser } from "../services/identity/users.ts";
import { namingMailFailure, templateFormatter } from "../services/integrations/notifications.ts";
import { requestConnection } from "../http/public-urls.ts";

const address = emailText();
const userBody = z.object({ emails: z.array(z.object({ address, main: boolField().optional() })) });
const adminBody = z.object({
  emails: z.array(z.object({ address, main: boolField().optional(), confirmed: boolField().nullable().optional() })),
});
const userParam = z.object({ user_uuid: uuidParam });
const emailParam = z.object({ email_uuid: uuidParam });
const listResponses = {
  204: "Replaced",
  400: "Invalid list",
  404: "No such user",
  409: "An address used by another user",
};
/** wazo-auth answers both email PUTs with the user's addresses `[{uuid, address, main, confirmed}]`. */
const emailsAnswer = {
  description: "The addresses `[{uuid, address, main, confirmed}]`",
  read: async ({ app, caller, params }: { app: AppContext; caller: Caller; params: { user_uuid: string } }) =>
    (await getUser(app, caller, params.user_uuid)).emails,
};

export function emailRoutes(): RouteGroup {
  return new RouteGroup("emails")
    .put(
      "/users/{user_uuid}/emails",
      {
        summary: "Replace a user's addresses (new ones unconfirmed)",
        acl: "auth.users.{user_uuid}.emails.update",
        params: userParam,
        body: userBody,
        responses: listResponses,
        wazoPutAnswer: emailsAnswer,
      },
      async ({ c, app, caller, params, body }) => {
        await updateEmails(app, caller, params.user_uuid, body.emails, false);
        return c.body(null, 204);
      },
    )
    .put(
      "/admin/users/{user_uuid}/emails",
      {
        summary: "Replace a user's addresses, setting `confirmed`",
        acl: "auth.admin.users.{user_uuid}.emails.update",
        params: userParam,
        body: adminBody,
        responses: listResponses,
        wazoPutAnswer: emailsAnswer,
      },
      async ({ c, app, caller, params, body }) => {
        await updateEmails(app, caller, params.user_uuid, body.emails, true);
        return c.body(null, 204);
      },
    )
    .get(
      "/users/{user_uuid}/emails/{email_uuid}/confirm",
      {
        operationId: "sendUserEmailConfirmation",
        summary: "Mail a new confirmation link for an unconfirmed address",
        acl: "auth.users.{user_uuid}.emails.{email_uuid}.confirm.read",
        params: z.object({ user_uuid: uuidParam, email_uuid: uuidParam }),
        responses: {
          204: "Sent",
          404: "No such user or address",
          409: "Already confirmed",
          503: "The mail could not be sent (the message names why), or `public_url` is not configured",
        },
      },
      async ({ c, app, caller, params }) => {
        // An administrator's action: a mail that cannot go is a 503 naming why.
        await namingMailFailure(
          requestConfirmation(app, caller, params.user_uuid, params.email_uuid, () => requestConnection(c, "emails")),
        );
        return c.body(null, 204);
      },
    )
    .get(
      "/emails/{email_uuid}/confirm",
      {
        operationId: "confirmEmailFromLink",
        summary: "Confirm an address with the emailed link (`?token=`)",
        acl: "auth.emails.{email_uuid}.confirm.update",
        tokenFromQuery: true,
        params: emailParam,
        responses: { 200: "The confirmation page", 404: "No such address" },
      },
      async ({ c, app, caller, params }) => {
        const owner = await confirmEmail(app, caller, params.email_uuid);
        // The page in the owner's language, else the browser's (docs/languages.md); an operator's template may ignore it.
        const locale = negotiateLocale({
          userLocale: owner.locale,
          acceptLanguage: c.req.header("Accept-Language"),
          tenantDefault: tenantDefaultLocale(app.config, owner.tenantUuid),
        });
        const body = templateFormatter(app.config).render("email_confirmation_get_body", { locale });
        return c.body(body, 200, { "Content-Type": app.config.email_confirmation_get_mimetype });
      },
    )
    .put(
      "/emails/{email_uuid}/confirm",
      {
        operationId: "confirmEmail",
        summary: "Confirm an address (token in the header)",
        acl: "auth.emails.{email_uuid}.confirm.update",
        params: emailParam,
        responses: { 204: "Confirmed", 404: "No such address" },
      },
      async ({ c, app, caller, params }) => {
        await confirmEmail(app, caller, params.email_uuid);
        return c.body(null, 204);
      },
    );
}
