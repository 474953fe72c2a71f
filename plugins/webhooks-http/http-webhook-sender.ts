import { lookup as dnsLookup, promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
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

/** The error code of a name that is this host's (`localhost`), refused without a lookup. */
const REFUSED = 'HOIST_ADDRESS_REFUSED';
/** The error code of a name with no public address, whether it has private ones or none (the same answer for both). */
const NO_PUBLIC = 'HOIST_NO_PUBLIC_ADDRESS';
/** Time allowed for one try of a DNS query, and tries. */
const DNS_TRY_MS = 2_000;
const DNS_TRIES = 2;
/** How much of an answer's body is read (then dropped): none of it is kept. */
const BODY_READ_BYTES = 64 * 1024;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** What a Node or undici error code means for the caller. */
function failureOf(err: unknown): WebhookFailure {
  for (let e = err as { code?: string; name?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    const code = e.code ?? '';
    if (code === REFUSED) return 'address_refused';
    if (code === NO_PUBLIC || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return 'dns';
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
 * in the URL is checked before connecting. Names are asked of DNS with c-ares and a time limit, not getaddrinfo: a
 * name server that never answers holds no thread of libuv's pool (which every file and lookup of the process shares),
 * and `/etc/hosts` names no public address. With `privateAddresses` (the operator's own receivers) the system's
 * lookup is used, `/etc/hosts` included.
 */
export class HttpWebhookSender implements WebhookSender, Lifecycle {
  private readonly agent: Agent;
  private readonly resolver = new dns.Resolver({ timeout: DNS_TRY_MS, tries: DNS_TRIES });

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
    if (isIP(host) && !this.options.privateAddresses && !isPublicAddress(host))
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
          ? 'is this host'
          : reason === 'dns'
            ? 'has no public address'
            : reason === 'timeout'
              ? `gave no answer within ${this.options.timeoutMs} ms`
              : ((err as Error).message ?? 'failed');
      throw new WebhookSendError(reason, `${url.host}: ${why}`, { cause: err });
    }
  }

  async stop(): Promise<void> {
    await this.agent.close();
  }

  /** node:net's lookup, giving only the addresses this sender may connect to. */
  private readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const found = this.options.privateAddresses ? this.systemLookup(hostname) : this.publicLookup(hostname);
    found.then(
      (addresses) => {
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };

  private systemLookup(hostname: string): Promise<LookupAddress[]> {
    return new Promise((resolve, reject) =>
      dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
    );
  }

  /** The public addresses of `hostname` in DNS (A and AAAA); fails alike when it has none or only private ones. */
  private async publicLookup(hostname: string): Promise<LookupAddress[]> {
    const name = hostname.toLowerCase().replace(/\.+$/, '');
    if (name === 'localhost' || name.endsWith('.localhost'))
      throw Object.assign(new Error(`${hostname} is this host`), { code: REFUSED });
    const [v4, v6] = await Promise.allSettled([this.resolver.resolve4(name), this.resolver.resolve6(name)]);
    const timedOut = [v4, v6].some((r) => r.status === 'rejected' && /TIMEOUT|CANCELLED/.test(r.reason?.code ?? ''));
    const addresses = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ].filter((a) => isPublicAddress(a.address));
    if (addresses.length) return addresses;
    if (timedOut) throw Object.assign(new Error(`DNS gave no answer for ${hostname}`), { code: 'ETIMEOUT' });
    throw Object.assign(new Error(`${hostname} has no public address`), { code: NO_PUBLIC });
  }
}
