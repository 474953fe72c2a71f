import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../config/load.js';
import { isPublicAddress } from '../../core/ports/webhook-sender.js';
import { HttpWebhookSender } from '../../plugins/webhooks-http/http-webhook-sender.js';
import webhooksHttp from '../../plugins/webhooks-http/index.js';
import { webhookSenderContract } from './webhook-sender.js';

// The class itself: the contract's timeouts are shorter than the setting's second.
webhookSenderContract('webhooks-http', async (options) => {
  const sender = new HttpWebhookSender(options);
  return { sender, cleanup: () => sender.stop() };
});

test('the plugin is webhooks-http, bound to the webhooks port, its options from the configuration', async () => {
  assert.is(webhooksHttp.id, 'webhooks-http');
  assert.is(webhooksHttp.port, 'webhooks');
  assert.is(webhooksHttp.name, 'http');
  const defaults = await webhooksHttp.create({ config: loadConfig({}, {}) });
  assert.equal((defaults as unknown as { options: object }).options, { timeoutMs: 10_000, privateAddresses: false });
  await defaults.stop();
  const set = await webhooksHttp.create({
    config: loadConfig({ HOIST_WEBHOOK_TIMEOUT_SECONDS: '3', HOIST_WEBHOOK_PRIVATE_ADDRESSES: 'true' }, {}),
  });
  assert.equal((set as unknown as { options: object }).options, { timeoutMs: 3_000, privateAddresses: true });
  await set.stop();
});

test('isPublicAddress: the public internet only, IPv6 forms of private IPv4 addresses included', () => {
  for (const a of [
    '1.1.1.1',
    '8.8.8.8',
    '93.184.216.34',
    '2606:4700:4700::1111',
    '[2a00:1450:4001::200e]',
    '::ffff:8.8.8.8',
  ])
    assert.ok(isPublicAddress(a), a);
  for (const a of [
    '127.0.0.1',
    '127.5.5.5',
    '0.0.0.0',
    '10.1.2.3',
    '100.64.0.1',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:0:10.0.0.1',
    '::127.0.0.1',
    '::7f00:1',
    '64:ff9b::a00:1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1%eth0',
    'ff02::1',
    '2001:db8::1',
    'localhost',
    'example.com',
    '',
  ])
    assert.not.ok(isPublicAddress(a), a);
});

test.run();
