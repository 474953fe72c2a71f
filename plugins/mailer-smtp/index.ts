import nodemailer, { type Transporter } from 'nodemailer';
import { HoistError } from '../../core/errors.js';
import type { Lifecycle } from '../../core/plugin.js';
import type { PluginDefinition } from '../../core/plugin.js';
import { MAILER, type Mailer, type MailMessage } from '../../core/ports/mailer.js';

/** Sends mail through an SMTP server (nodemailer). */
export class SmtpMailer implements Mailer, Lifecycle {
  constructor(
    private readonly transport: Transporter,
    private readonly from: string,
  ) {}

  async send(message: MailMessage): Promise<void> {
    try {
      await this.transport.sendMail({ from: this.from, ...message });
    } catch (cause) {
      throw new HoistError('unavailable', 'Mail could not be sent', {}, { cause });
    }
  }

  async stop(): Promise<void> {
    this.transport.close();
  }
}

export default {
  id: 'mailer-smtp',
  port: 'mailer',
  name: 'smtp',
  token: MAILER,
  create({ config }) {
    if (!config.smtpUrl) throw new Error('smtpUrl (HOIST_SMTP_URL) is required');
    return new SmtpMailer(nodemailer.createTransport(config.smtpUrl), config.mailFrom);
  },
} satisfies PluginDefinition<Mailer>;
