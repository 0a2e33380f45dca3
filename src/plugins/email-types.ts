// Email notification plugins (docs/plugins.md): the constructor receives the plugin's
// configuration (`EmailPluginConfig`), and the two methods receive the contexts of
// wazo-auth's email confirmation and password reset. A failure to send must throw: the request then answers 503
// and nothing it did is kept.

export interface ConnectionParams {
  hostname: string;
  port: string | null;
  prefix: string;
  /** `public_url` without a trailing slash, the base of Tessera's own links (not in wazo-auth's context): added as the mail is sent. */
  public_url?: string;
}

export interface ConfirmationContext extends ConnectionParams {
  /** Tessera addition (issue 43): the language of the mail (BCP 47), the user's or their tenant's; templates get `t(key, values)` in it. */
  locale?: string;
  token: string;
  username: string | null;
  email_uuid: string;
  email_address: string;
}

export interface PasswordResetContext extends ConnectionParams {
  /** Tessera addition (issue 43): the language of the mail (BCP 47), the user's or their tenant's; templates get `t(key, values)` in it. */
  locale?: string;
  token: string;
  username: string | null;
  user_uuid: string;
  email_address: string;
}

/** A plain-text notice to an administrator (a webhook disabled): no template, no link to follow. */
export interface NoticeContext {
  email_address: string;
  subject: string;
  text: string;
}

/** Renders the configured templates (Jinja syntax, through nunjucks). */
export interface TemplateFormatter {
  render(
    template:
      | "email_confirmation"
      | "email_confirmation_subject"
      | "email_confirmation_get_body"
      | "password_reset_email"
      | "password_reset_email_subject",
    context: object,
  ): string;
}

export interface EmailPluginConfig {
  /** The whole service configuration: `smtp.*`, `*_from_name`, `*_from_address`, ... */
  config: Record<string, unknown>;
  formatter: TemplateFormatter;
}

export interface EmailNotificationPlugin {
  sendConfirmation(context: ConfirmationContext): Promise<void>;
  sendPasswordReset(context: PasswordResetContext): Promise<void>;
  /** Optional: a plugin without it sends no notices (they are logged instead). */
  sendNotice?(context: NoticeContext): Promise<void>;
}
