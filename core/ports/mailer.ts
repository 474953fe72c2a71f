import { token } from '../tokens.js';

/** An e-mail message Hoist sends: plain text, one recipient. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** Sends mail. Plugins: `mailer-outbox` (stored in the database, the default) and `mailer-smtp`. */
export interface Mailer {
  /** Delivers one message or throws a HoistError('unavailable') whose cause is the transport's error. */
  send(message: MailMessage): Promise<void>;
}

export const MAILER = token<Mailer>('hoist.Mailer');
