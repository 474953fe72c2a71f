import http from 'node:http';
import { OutboxMail } from '../../plugins/mailer-outbox/outbox-mail.js';
import type { Kernel } from '../../adapters/kernel.js';

/** An answer of the edge, with every Set-Cookie header kept. */
export interface EdgeAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  cookies: string[];
  body: string;
}

/** One request to the edge at `edge` for `host`; a `form` is sent urlencoded. */
export function edgeRequest(
  edge: string,
  host: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; form?: Record<string, string>; body?: string; agent?: http.Agent } = {},
): Promise<EdgeAnswer> {
  const url = new URL(edge);
  const body = opts.form ? new URLSearchParams(opts.form).toString() : opts.body;
  const headers: Record<string, string> = {
    host,
    ...(opts.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    ...opts.headers,
  };
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers, agent: opts.agent },
      (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c) => chunks.push(c))
          .on('end', () =>
            resolve({
              status: res.statusCode!,
              headers: res.headers,
              cookies: res.headers['set-cookie'] ?? [],
              body: Buffer.concat(chunks).toString(),
            }),
          );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The mail the outbox holds for `to`, oldest first. */
export function mailFor(kernel: Kernel, to: string): Promise<OutboxMail[]> {
  return kernel.orm.em.fork().find(OutboxMail, { to }, { orderBy: { createdAt: 'asc' } });
}

/** Waits (up to 20 s) until `to` has more than `known` mails; returns the newest one's code and sign-in link. */
export async function nextCode(
  kernel: Kernel,
  to: string,
  known = 0,
): Promise<{ code: string; link: string; mail: OutboxMail }> {
  const end = Date.now() + 20_000;
  for (;;) {
    const mails = await mailFor(kernel, to);
    if (mails.length > known) {
      const mail = mails[mails.length - 1];
      const code = /^Code: (\d+)$/m.exec(mail.text)?.[1];
      const link = /^(https?:\/\/\S+\/\.hoist\/access\/link\?\S+)$/m.exec(mail.text)?.[1];
      if (!code || !link) throw new Error(`no code or link in mail: ${mail.text}`);
      return { code, link, mail };
    }
    if (Date.now() > end) throw new Error(`no mail for ${to}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The value of cookie `name` in Set-Cookie headers, with its attributes. */
export function setCookie(cookies: string[], name: string): { value: string; attributes: string[] } | null {
  const line = cookies.find((c) => c.startsWith(`${name}=`));
  if (!line) return null;
  const [pair, ...attributes] = line.split(';').map((s) => s.trim());
  return { value: pair.slice(name.length + 1), attributes };
}
