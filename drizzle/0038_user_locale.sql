-- Issue 43: the user's own language (a BCP 47 tag) for the hosted pages and the mails; null = none chosen.
ALTER TABLE "auth_user" ADD COLUMN IF NOT EXISTS "locale" text;
