import { domainToASCII } from 'node:url';
import { parse } from 'tldts';
import { invalid } from '../errors.js';

/** Longest hostname DNS allows (RFC 1035), less room for the `_hoist-challenge.` label of its TXT record. */
export const HOSTNAME_MAX = 253 - '_hoist-challenge.'.length;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Names a customer domain may not be: the service's own. */
export interface ReservedNames {
  /** The apps domain: neither it nor any name under it. */
  appsDomain: string;
  /** Host of the API's public URL, when set. */
  apiHost?: string | null;
}

const refuse = (reason: string, hostname: unknown) =>
  invalid(reason, { field: 'hostname', hostname: typeof hostname === 'string' ? hostname.slice(0, 300) : null });

/**
 * The canonical form of a customer subdomain (lowercased, punycode, no trailing dot), or
 * invalid_request saying why it cannot be one: not a hostname, too long, a wildcard, an IP address,
 * an apex (a registrable domain itself, by the Public Suffix List: `customer.com`,
 * `customer.co.uk`), a public suffix, or the service's own apps domain or a name under it.
 */
export function checkHostname(input: unknown, reserved: ReservedNames): string {
  if (typeof input !== 'string' || !input.trim()) throw refuse('hostname is required, e.g. app.example.com', input);
  let name = input.trim().toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name.includes('*'))
    throw refuse('A wildcard cannot be added: add each subdomain by name, e.g. app.example.com', input);
  if (/[^\x00-\x7f]/.test(name)) name = domainToASCII(name) || name;
  if (name.length > HOSTNAME_MAX) throw refuse(`hostname must be at most ${HOSTNAME_MAX} characters`, input);
  const info = parse(name, { allowPrivateDomains: true });
  if (info.isIp || /^\[.*\]$/.test(name))
    throw refuse('An IP address cannot be a custom domain: give a subdomain such as app.example.com', input);
  if (!name.split('.').every((label) => LABEL.test(label))) {
    throw refuse(
      'hostname is not a valid DNS name: dot-separated labels of 1 to 63 letters, ' +
        'digits and hyphens, not starting or ending with a hyphen',
      input,
    );
  }
  const apps = reserved.appsDomain.toLowerCase().replace(/\.$/, '');
  if (name === apps || name.endsWith(`.${apps}`) || (reserved.apiHost && name === reserved.apiHost.toLowerCase())) {
    throw refuse(`${name} belongs to this service: project hosts under ${apps} need no custom domain`, input);
  }
  if (!info.domain || name === info.publicSuffix)
    throw refuse(`${name} is a public suffix, not a domain you can own`, input);
  if (name === info.domain) {
    throw refuse(
      `${name} is an apex domain: only subdomains can be added (e.g. app.${name}), ` +
        `since an apex cannot hold the CNAME record`,
      input,
    );
  }
  return name;
}
