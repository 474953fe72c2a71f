import { BlockList, isIP } from 'node:net';
import { token } from '../tokens.js';

/** One signed notification, ready to post. */
export interface WebhookRequest {
  /** An http(s) URL an account registered. */
  url: string;
  /** Headers to send as they are (the signature among them). */
  headers: Record<string, string>;
  /** The JSON body. */
  body: string;
}

/** Why a post got no answer: an address Hoist does not post to, no address, no connection, no answer in time, else. */
export type WebhookFailure = 'address_refused' | 'dns' | 'connect' | 'timeout' | 'tls' | 'other';

/** A post that got no answer; `message` names the host and why, never a header or the body. */
export class WebhookSendError extends Error {
  override name = 'WebhookSendError';
  constructor(
    readonly reason: WebhookFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Posts the webhook notifications that accounts asked for to the URLs they registered. A URL comes from an account
 * that may be hostile, so a sender posts only to public addresses (`isPublicAddress`), checked on the address it
 * connects to (a name that resolves to a private one, now or after a change of its DNS records, is refused), unless
 * the operator allowed private ones. Plugin: `webhooks-http` (undici).
 */
export interface WebhookSender {
  /**
   * Posts `request` once, following no redirect, and resolves the answer's status (any status: the caller decides
   * what counts as delivered). Throws WebhookSendError when there was no answer.
   */
  post(request: WebhookRequest): Promise<{ status: number }>;
}

export const WEBHOOK_SENDER = token<WebhookSender>('hoist.WebhookSender');

/** Addresses that are not the public internet: this host, private networks, link-local (cloud metadata), and so on. */
const NOT_PUBLIC = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC.addSubnet(net, bits, 'ipv6');

/** An IPv6 address that carries an IPv4 one (`::ffff:a.b.c.d`, `::a.b.c.d`): that IPv4 address, else null. */
function embeddedIpv4(address: string): string | null {
  const m = /^::(?:ffff:(?:0+:)?)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const [a, b] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
  return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
}

/**
 * Whether `address` (an IP address; brackets and a zone allowed) is on the public internet: not this host, a private
 * or shared network, link-local, multicast, reserved or for documentation, nor an IPv6 form of one of those.
 * Anything that is not an IP address is not public.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return false;
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4) return isPublicAddress(v4);
    return !NOT_PUBLIC.check(bare, 'ipv6');
  }
  return !NOT_PUBLIC.check(bare, 'ipv4');
}
