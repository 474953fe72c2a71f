import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HoistError } from '../../core/errors.js';
import type { Mailer, MailMessage } from '../../core/ports/mailer.js';

/** A mailer under test and a way to read what it delivered. */
export interface MailerUnderTest {
  mailer: Mailer;
  /** Messages delivered to `to`, oldest first, as the recipient's side sees them. */
  delivered(to: string): Promise<MailMessage[]>;
  /** Makes the backend unreachable, so the next send must fail; absent when it cannot be. */
  breakBackend?(): Promise<void>;
  cleanup(): Promise<void>;
}

/**
 * The Mailer contract every mailer plugin passes: a message arrives whole (recipient, subject,
 * text with non-ASCII and long lines), once, and only for its recipient; a backend that cannot
 * take it rejects with HoistError('unavailable') carrying the cause.
 */
export function mailerContract(name: string, fresh: () => Promise<MailerUnderTest>) {
  const t = suite(`mailer contract: ${name}`);

  t('a message arrives whole, for its recipient only', async () => {
    const m = await fresh();
    try {
      const text = `Hello Zoë — your code is 123456.\n\nLink: https://example.test/${'x'.repeat(300)}\nLast line ✓`;
      await m.mailer.send({ to: 'ann@example.test', subject: 'Sign in to Hoist — code', text });
      const got = await m.delivered('ann@example.test');
      assert.is(got.length, 1);
      assert.is(got[0].to, 'ann@example.test');
      assert.is(got[0].subject, 'Sign in to Hoist — code');
      assert.is(got[0].text.replace(/\r\n/g, '\n').trimEnd(), text);
      assert.equal(await m.delivered('bob@example.test'), []);
    } finally {
      await m.cleanup();
    }
  });

  t('every message to one recipient arrives, once', async () => {
    const m = await fresh();
    try {
      for (const n of [1, 2, 3])
        await m.mailer.send({ to: 'carl@example.test', subject: `message ${n}`, text: `body ${n}` });
      assert.equal((await m.delivered('carl@example.test')).map((x) => x.subject).sort(), [
        'message 1',
        'message 2',
        'message 3',
      ]);
    } finally {
      await m.cleanup();
    }
  });

  t('an unreachable backend rejects with unavailable and keeps the cause', async () => {
    const m = await fresh();
    try {
      if (!m.breakBackend) return;
      await m.breakBackend();
      const err = await m.mailer.send({ to: 'dan@example.test', subject: 's', text: 't' }).catch((e) => e);
      assert.instance(err, HoistError);
      assert.is(err.code, 'unavailable');
      assert.ok(err.cause, 'the transport error is kept as cause');
      assert.not.match(err.message, /ECONNREFUSED|127\.0\.0\.1/, 'the message shown to clients names no internals');
    } finally {
      await m.cleanup();
    }
  });

  t.run();
}
