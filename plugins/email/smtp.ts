// The stock `smtp` email notification plugin: plain-text messages through nodemailer, with the
// `smtp` section of the configuration (hostname, port, tls, starttls, username, password, timeout).
import type { Transporter } from "nodemailer";
import type {
  ConfirmationContext,
  EmailNotificationPlugin,
  EmailPluginConfig,
  NoticeContext,
  PasswordResetContext,
} from "../../src/plugins/sdk.ts";

interface SmtpConfig {
  hostname: string;
  port: number;
  tls: boolean;
  starttls: boolean;
  username: string | null;
  password: string | null;
  timeout: number;
}

export default class SmtpEmailPlugin implements EmailNotificationPlugin {
  /** Made on the first mail: nodemailer is loaded then, not at every start (~170 ms, issue 28). */
  private transporter: Promise<Transporter> | null = null;
  private readonly config: Record<string, unknown>;
  private readonly formatter: EmailPluginConfig["formatter"];

  constructor({ config, formatter }: EmailPluginConfig) {
    this.config = config;
    this.formatter = formatter;
  }

  private transport(): Promise<Transporter> {
    this.transporter ??= this.createTransport().catch((e) => {
      this.transporter = null; // tried again with the next mail
      throw e;
    });
    return this.transporter;
  }

  private async createTransport(): Promise<Transporter> {
    const { default: nodemailer } = await import("nodemailer");
    const smtp = this.config.smtp as SmtpConfig;
    const ms = smtp.timeout * 1000;
    return nodemailer.createTransport({
      host: smtp.hostname,
      port: smtp.port,
      secure: smtp.tls,
      requireTLS: smtp.starttls,
      ignoreTLS: !smtp.tls && !smtp.starttls,
      auth: smtp.username ? { user: smtp.username, pass: smtp.password ?? "" } : undefined,
      connectionTimeout: ms,
      greetingTimeout: ms,
      socketTimeout: ms,
    });
  }

  private from(prefix: "email_confirmation" | "password_reset"): string {
    return `${this.config[`${prefix}_from_name`]} <${this.config[`${prefix}_from_address`]}>`;
  }

  async sendConfirmation(ctx: ConfirmationContext): Promise<void> {
    await (await this.transport()).sendMail({
      from: this.from("email_confirmation"),
      to: ctx.username ? `${ctx.username} <${ctx.email_address}>` : ctx.email_address,
      subject: this.formatter.render("email_confirmation_subject", ctx).trim(),
      text: this.formatter.render("email_confirmation", ctx),
    });
  }

  async sendPasswordReset(ctx: PasswordResetContext): Promise<void> {
    await (await this.transport()).sendMail({
      from: this.from("password_reset"),
      to: ctx.username ? `${ctx.username} <${ctx.email_address}>` : ctx.email_address,
      subject: this.formatter.render("password_reset_email_subject", ctx).trim(),
      text: this.formatter.render("password_reset_email", ctx),
    });
  }

  async sendNotice(ctx: NoticeContext): Promise<void> {
    await (await this.transport()).sendMail({
      from: this.from("email_confirmation"),
      to: ctx.email_address,
      subject: ctx.subject,
      text: ctx.text,
    });
  }
}
