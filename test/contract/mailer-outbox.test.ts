// legs: db
import { OutboxMail } from '../../plugins/mailer-outbox/outbox-mail.js';
import { MAILER, type Mailer } from '../../core/ports/mailer.js';
import { testKernel } from '../helpers/kernel.js';
import { mailerContract } from './mailer.js';

mailerContract('mailer-outbox', async () => {
  const kernel = await testKernel({ mailer: 'outbox' });
  let stopped = false;
  return {
    mailer: kernel.get<Mailer>(MAILER),
    delivered: async (to) =>
      (await kernel.orm.em.fork().find(OutboxMail, { to }, { orderBy: { createdAt: 'asc', id: 'asc' } })).map(
        ({ to, subject, text }) => ({ to, subject, text }),
      ),
    cleanup: async () => {
      if (!stopped) await kernel.stop();
      stopped = true;
    },
  };
});
