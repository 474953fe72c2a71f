import { createHmac, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { invalid } from '../errors.js';
import { isPublicAddress } from '../ports/webhook-sender.js';

/**
 * The events a webhook may receive: a deployment (a deploy, a preview, a promote or rollback) that started (or started
 * again: a retry) or ended.
 */
export const WEBHOOK_EVENTS = [
  'deployment.started',
  'deployment.succeeded',
  'deployment.failed',
  'deployment.canceled',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
/** What a webhook receives when it names no events: every deployment that ends. */
export const DEFAULT_EVENTS: readonly WebhookEvent[] = [
  'deployment.succeeded',
  'deployment.failed',
  'deployment.canceled',
];

/** The event of an operation that ended with `status`, or that `started`. */
export const eventOfStatus = (status: string): WebhookEvent | null =>
  (WEBHOOK_EVENTS as readonly string[]).includes(`deployment.${status}`)
    ? (`deployment.${status}` as WebhookEvent)
    : null;

/** The longest webhook URL. */
export const URL_MAX = 2048;

/** A webhook's URL as stored: http(s), no user or password, no fragment; throws invalid_request (field url). */
export function checkUrl(input: unknown, privateAddresses: boolean): string {
  const refuse = (why: string) => invalid(`url ${why}`, { field: 'url' });
  if (typeof input !== 'string' || !input) throw refuse('is required: an http or https URL');
  if (input.length > URL_MAX) throw refuse(`is longer than ${URL_MAX} characters`);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw refuse('is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse('must be http or https');
  if (url.username || url.password)
    throw refuse('must not carry a user name or password (put a token in its path or query)');
  url.hash = '';
  // A final dot names the same host (`localhost.`).
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
  if (!privateAddresses) {
    if (isIP(host)) {
      if (!isPublicAddress(host)) throw refuse(`names ${host}, which is not a public address`);
    } else if (host === 'localhost' || host.endsWith('.localhost') || !host.includes('.'))
      throw refuse(`names ${host}, which is not a public host name`);
  }
  return url.toString();
}

/** The events asked for, once each in WEBHOOK_EVENTS' order (DEFAULT_EVENTS when none is given); else invalid. */
export function checkEvents(input: unknown): WebhookEvent[] {
  if (input === undefined) return [...DEFAULT_EVENTS];
  if (!Array.isArray(input) || input.length === 0)
    throw invalid(`events must be a non-empty list of: ${WEBHOOK_EVENTS.join(', ')}`, { field: 'events' });
  for (const e of input)
    if (!(WEBHOOK_EVENTS as readonly unknown[]).includes(e))
      throw invalid(`events: ${JSON.stringify(e)} is not one of ${WEBHOOK_EVENTS.join(', ')}`, { field: 'events' });
  return WEBHOOK_EVENTS.filter((e) => input.includes(e));
}

/** The events as stored: between commas, so that one is found with `like '%,<event>,%'`. */
export const storedEvents = (events: readonly string[]) => `,${events.join(',')},`;
export const eventsOf = (stored: string) => stored.split(',').filter(Boolean);

/** A new signing secret, in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The headers of one try of delivery `id` of `body`, signed with `secret` as Standard Webhooks does (so its libraries
 * verify it): `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` under the secret's bytes.
 */
export function signedHeaders(
  id: string,
  event: string,
  body: string,
  secret: string,
  now: Date,
): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return {
    'content-type': 'application/json',
    'user-agent': 'Hoist-Webhooks/1',
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${signature}`,
    'x-hoist-event': event,
  };
}
