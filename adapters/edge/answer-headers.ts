import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { clearsCookies, isProxyInstruction } from '../../core/ports/site-rules.cjs';
import { tenantCookie } from './edge-cookies.js';

/** The edge's header that a release's answer never replaces: a draft or private release stays out of search engines. */
export const EDGE_WINS = 'x-robots-tag';

// What Node's writeHead accepts in a reason phrase (its checkInvalidHeaderChar): no control character but HTAB.
const PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * A release's reason phrase as the edge may pass it on: the phrase itself, or '' (the standard phrase for the status
 * is sent then) when it holds a control character, which would make writeHead throw (ERR_INVALID_CHAR).
 */
export function reasonPhrase(phrase: string | undefined): string {
  return phrase && PHRASE.test(phrase) ? phrase : '';
}

const text = (b: Buffer | string) => (typeof b === 'string' ? b : b.toString('latin1'));

/**
 * The headers of a release's answer (`raw`: undici's Buffers or node:http's rawHeaders) as the client gets them, as a
 * flat list: the edge's `own` first (with the release's value where it sends one, but EDGE_WINS), then the release's
 * but Transfer-Encoding, instructions to a proxy in front of the edge (isProxyInstruction), cookies for other
 * tenants' hosts (tenantCookie) and a Clear-Site-Data that would clear theirs (clearsCookies), with Connection as an
 * HTTP/1.0 client asked (close by default), else the release's or the client's (keep-alive by default).
 */
export function answerHeaders(
  raw: readonly (Buffer | string)[],
  own: OutgoingHttpHeaders,
  req: IncomingMessage,
  appsDomain: string,
): string[] {
  const names = raw.map((b, i) => (i % 2 ? '' : text(b).toLowerCase()));
  const out: string[] = [];
  for (const name in own) {
    const i = names.indexOf(name);
    out.push(name, i < 0 || name === EDGE_WINS ? String(own[name]) : text(raw[i + 1]));
  }
  let connection = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = names[i];
    if (name === 'transfer-encoding' || Object.hasOwn(own, name) || isProxyInstruction(name)) continue;
    if (name === 'set-cookie' && !tenantCookie(text(raw[i + 1]), appsDomain)) continue;
    if (name === 'clear-site-data' && clearsCookies(text(raw[i + 1]))) continue;
    if (name === 'connection') {
      if (req.httpVersion === '1.0') continue;
      connection = true;
    }
    out.push(name, text(raw[i + 1]));
  }
  if (req.httpVersion === '1.0') out.push('connection', req.headers.connection || 'close');
  else if (!connection) out.push('connection', req.headers.connection || 'keep-alive');
  return out;
}
