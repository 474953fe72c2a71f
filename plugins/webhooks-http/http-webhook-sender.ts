import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import {
  isPublicAddress,
  WebhookSendError,
  type WebhookFailure,
  type WebhookRequest,
  type WebhookSender,
} from '../../core/ports/webhook-sender.js';
import type { Lifecycle } from '../../core/plugin.js';

/** Options of an HttpWebhookSender. */
export interface HttpWebhookOptions {
  /** Time allowed for a post: connecting, the answer's headers, and the part of its body that is read. */
  timeoutMs: number;
  /** Post to private and loopback addresses too (an operator's own network; tests). */
  privateAddresses: boolean;
}

/** The error code of a lookup that found no address Hoist posts to. */
const REFUSED = 'HOIST_ADDRESS_REFUSED';
/** How much of an answer's body is read (then dropped): none of it is kept. */
const BODY_READ_BYTES = 64 * 1024;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** What a Node or undici error code means for the caller. */
function failureOf(err: unknown): WebhookFailure {
  for (let e = err as { code?: string; name?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    const code = e.code ?? '';
    if (code === REFUSED) return 'address_refused';
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return 'dns';
    if (/TIMEOUT/.test(code) || e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout';
    if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code)) return 'tls';
    if (/^E(CONNREFUSED|CONNRESET|HOSTUNREACH|NETUNREACH|PIPE)$|UND_ERR_SOCKET|UND_ERR_CLOSED/.test(code))
      return 'connect';
  }
  return 'other';
}

/**
 * Posts webhooks with undici, one shared connection pool, following no redirect. Every name is resolved by this
 * sender's own lookup, which keeps only public addresses (unless `privateAddresses`): the address checked is the one
 * connected to, so a DNS record changed between a check and the connection cannot lead it inside. An address written
 * in the URL is checked before connecting.
 */
export class HttpWebhookSender implements WebhookSender, Lifecycle {
  private readonly agent: Agent;

  constructor(private readonly options: HttpWebhookOptions) {
    this.agent = new Agent({
      connect: { lookup: this.lookup, timeout: options.timeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 4_000,
      connections: 16,
    });
  }

  async post(req: WebhookRequest): Promise<{ status: number }> {
    const url = new URL(req.url);
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new WebhookSendError('other', `${url.protocol} is not http or https`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !this.allowed(host))
      throw new WebhookSendError('address_refused', `${host} is not a public address`);
    try {
      const answer = await request(url, {
        method: 'POST',
        headers: req.headers,
        body: req.body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      await answer.body.dump({ limit: BODY_READ_BYTES }).catch(() => undefined);
      return { status: answer.statusCode };
    } catch (err) {
      const reason = failureOf(err);
      const why =
        reason === 'address_refused'
          ? 'resolves to no public address'
          : reason === 'timeout'
            ? `gave no answer within ${this.options.timeoutMs} ms`
            : ((err as Error).message ?? 'failed');
      throw new WebhookSendError(reason, `${url.host}: ${why}`, { cause: err });
    }
  }

  async stop(): Promise<void> {
    await this.agent.close();
  }

  private allowed(address: string): boolean {
    return this.options.privateAddresses || isPublicAddress(address);
  }

  /** node:net's lookup, keeping only the addresses this sender may connect to. */
  private readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const kept = addresses.filter((a) => this.allowed(a.address));
      if (!kept.length)
        return callback(Object.assign(new Error(`${hostname} resolves to no public address`), { code: REFUSED }), []);
      if (options.all) return callback(null, kept);
      callback(null, kept[0].address, kept[0].family);
    });
  };
}
