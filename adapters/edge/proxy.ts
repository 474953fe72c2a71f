import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import { badGatewayPage } from './pages.js';

/**
 * Forwards HTTP requests and WebSocket upgrades to a Node.js release, adding X-Forwarded-For,
 * -Host, -Port and -Proto. A release that does not answer gets a 502 page.
 */
export function createReleaseProxy() {
  const proxy = createProxyServer({ xfwd: true, ws: true, proxyTimeout: 120_000 });
  const fail = (res: ServerResponse | Duplex) => {
    if ('writeHead' in res) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(badGatewayPage());
    } else res.destroy();
  };
  return {
    /** Forwards one HTTP request to `target` (a base URL such as http://127.0.0.1:4123). */
    web(req: IncomingMessage, res: ServerResponse, target: string, headers: Record<string, string>) {
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      proxy.web(req, res, { target }, () => fail(res));
    },
    /** Forwards a WebSocket upgrade to `target`. */
    ws(req: IncomingMessage, socket: Duplex, head: Buffer, target: string) {
      proxy.ws(req, socket, head, { target: target.replace(/^http/, 'ws') }, () => socket.destroy());
    },
  };
}
