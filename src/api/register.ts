// Self-registration (wazo-auth's user registration), off unless `enabled_http_plugins.user_registration`.
import { z } from "zod";
import { NotFound } from "../domain/errors.ts";
import { RouteGroup } from "../http/route.ts";
import { CAPS, emailText, text, usernameText } from "../domain/strings.ts";
import { registerUser } from "../services/identity/registration.ts";
import { requestConnection } from "../http/public-urls.ts";

const body = z.object({
  username: usernameText(),
  password: text(CAPS.password, { min: 1 }),
  firstname: text(CAPS.personName, { maxBytes: CAPS.personNameBytes }).nullable().optional(),
  lastname: text(CAPS.personName, { maxBytes: CAPS.personNameBytes }).nullable().optional(),
  email_address: emailText(),
});

export function registerRoutes(): RouteGroup {
  return new RouteGroup("users").post(
    "/users/register",
    {
      summary: "Register: a new tenant and user, then a confirmation mail",
      body,
      responses: {
        200: "The user",
        400: "Invalid body",
        404: "Registration is disabled",
        409: "Username or email already used",
        503: "The mail could not be sent, or `public_url` is not configured (nothing was created)",
      },
    },
    async ({ c, app, body }) => {
      if (!app.config.enabled_http_plugins.user_registration)
        throw new NotFound("users", undefined, "Registration is disabled");
      return c.json(await registerUser(app, body, requestConnection(c, "users")));
    },
  );
}
