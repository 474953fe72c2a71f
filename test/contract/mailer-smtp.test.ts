import type { AddressInfo } from 'node:net';
import PostalMime from 'postal-mime';
import { buffer } from 'node:stream/consumers';
import { SMTPServer } from 'smtp-server';
import { loadConfig } from '../../config/load.js';
import type { Lifecycle } from '../../core/plugin.js';
import type { Mailer, MailMessage } from '../../core/ports/mailer.js';
import mailerSmtp from '../../plugins/mailer-smtp/index.js';
import { mailerContract } from './mailer.js';

/** A real SMTP server on loopback that keeps what it receives, as its recipients would read it. */
async function smtpServer() {
  const received: MailMessage[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, done) {
      buffer(stream)
        .then((raw) => PostalMime.parse(raw))
        .then((mail) => {
          for (const rcpt of session.envelope.rcptTo)
            received.push({ to: rcpt.address, subject: mail.subject ?? '', text: mail.text ?? '' });
          done();
        }, done);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = (server as unknown as { server: { address(): AddressInfo } }).server.address();
  return { port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

mailerContract('mailer-smtp', async () => {
  const smtp = await smtpServer();
  const config = loadConfig(
    {},
    { mailer: 'smtp', smtpUrl: `smtp://127.0.0.1:${smtp.port}`, mailFrom: 'Hoist <hoist@example.test>' },
  );
  const mailer = (await mailerSmtp.create({ config })) as Mailer & Lifecycle;
  let closed = false;
  const close = async () => {
    if (!closed) await smtp.close();
    closed = true;
  };
  return {
    mailer,
    delivered: async (to) => smtp.received.filter((m) => m.to === to),
    breakBackend: close,
    cleanup: async () => {
      await mailer.stop?.();
      await close();
    },
  };
});
