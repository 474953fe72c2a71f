import type { Transporter } from 'nodemailer';
import { HoistError } from '../../core/errors.js';
import { CONFIG, definePlugin, PLUGIN_API_VERSION, type Lifecycle } from '../../core/plugin.js';
import type { Mailer, MailMessage } from '../../core/ports/mailer.js';

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

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'mailer-smtp',
  port: 'mailer',
  name: 'smtp',
  deps: { config: CONFIG },
  async create({ config }) {
    if (!config.smtpUrl) throw new Error('smtpUrl (HOIST_SMTP_URL) is required');
    // Loaded only when chosen: a start on the embedded defaults stays fast.
    const { default: nodemailer } = await import('nodemailer');
    return new SmtpMailer(nodemailer.createTransport(config.smtpUrl), config.mailFrom);
  },
});
