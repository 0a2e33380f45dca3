-- An administrator who sets a user's password may require the user to choose a new one at the next
-- login (docs/security.md "Must change the password"): the hosted sign-in page asks for it before
-- continuing, POST /0.1/token issues a token that may only change the password. Any new password
-- clears it.
ALTER TABLE "auth_user" ADD COLUMN "password_change_required" boolean DEFAULT false NOT NULL;
