import type { Command } from 'commander';
import { normalizeEmail } from '../../../core/auth/auth-service.js';
import { OutboxMail } from '../../../plugins/mailer-outbox/outbox-mail.js';
import { withKernel } from '../admin.js';

/** `hoist mail list`: the mail kept by the outbox mailer (the default), so links in it can be followed. */
export default function mail(program: Command): void {
  const group = program.command('mail').description('read the mail outbox (mailer=outbox)');

  group
    .command('list')
    .description('show the stored mail, newest first')
    .option('--to <email>', 'only mail to this address')
    .option('--json', 'print the mail as JSON')
    .action(async (o: { to?: string; json?: boolean }) => {
      const rows = await withKernel(async (k) => {
        if (k.config.mailer !== 'outbox')
          console.error(`hoist: note: mailer is ${k.config.mailer}; only mail sent with mailer=outbox is stored`);
        return k.orm.em.find(OutboxMail, o.to === undefined ? {} : { to: normalizeEmail(o.to) }, {
          orderBy: { createdAt: 'desc' },
        });
      });
      const list = rows.map((m) => ({
        id: m.id,
        to: m.to,
        subject: m.subject,
        created_at: m.createdAt.toISOString(),
        text: m.text,
      }));
      if (o.json) return console.log(JSON.stringify(list));
      if (!list.length) return console.log('no mail');
      console.log(
        list
          .map((m) => `To:      ${m.to}\nSubject: ${m.subject}\nDate:    ${m.created_at}\n\n${m.text.trimEnd()}\n`)
          .join(`${'-'.repeat(72)}\n`),
      );
    });
}
