// The client of bench/upload-to-live.ts, in a process of its own as a real client is: it makes the ZIPs, uploads
// them, follows each operation's events and polls the edge, so none of its CPU is counted as Hoist's and none of it
// runs on Hoist's main thread. Started by upload-to-live.ts with child_process.fork; answers its calls over IPC
// (`{ id, method, args }` → `{ id, result }` or `{ id, error }`).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { sseEvents } from '../client/operation-stream.js';
import { zipOf } from '../test/helpers/live.js';

const SITE_BYTES = 1_000_000;
const FILES = 50;

/** A ZIP of index.html (carrying `marker`) and 49 assets, about SITE_BYTES in all, half of them random binary. */
function siteZip(marker: string): Promise<Buffer> {
  const each = Math.floor(SITE_BYTES / FILES);
  const files: Record<string, Buffer> = {
    'index.html': Buffer.from(
      `<!doctype html><title>${marker}</title><p>${marker}</p>${'<p>filler</p>'.repeat(each / 13)}`,
    ),
  };
  for (let i = 1; i < FILES; i++) {
    const raw = randomBytes(i % 2 ? each : Math.ceil((each * 3) / 4));
    // Odd files are incompressible images; even ones base64 text that deflates to about 3/4.
    files[i % 2 ? `img/a${i}.png` : `js/a${i}.js`] = i % 2 ? raw : Buffer.from(raw.toString('base64'));
  }
  return zipOf(files);
}

/** A ZIP of a dependency-free Node.js app (a start script) whose server answers every request with `marker`. */
function nodeAppZip(marker: string): Promise<Buffer> {
  const pkg = { name: 'bench-app', version: '1.0.0', scripts: { start: 'node server.js' } };
  const server =
    `require('http').createServer((req, res) => res.end(${JSON.stringify(marker)}))` +
    `.listen(Number(process.env.PORT), '127.0.0.1');\n`;
  return zipOf({ 'package.json': JSON.stringify(pkg), 'server.js': server });
}

// node:http with keep-alive: what a CLI would use, and cheaper than fetch.
const agent = new http.Agent({ keepAlive: true });

/** One HTTP request; resolves the status and the body as text. */
function request(
  url: URL,
  opts: { method?: string; headers?: Record<string, string | number>; body?: Buffer } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: opts.method ?? 'GET',
        headers: opts.headers,
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c) => chunks.push(c))
          .on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject).end(opts.body);
  });
}

/**
 * Follows an operation's event stream (`Accept: text/event-stream`, as `hoist deploy` does) until its state is no
 * longer running; resolves that state.
 */
function follow(url: URL, headers: Record<string, string>): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, headers: { ...headers, accept: 'text/event-stream' } },
      (res) => {
        void (async () => {
          for await (const e of sseEvents(res)) {
            const op = e.event === 'state' ? JSON.parse(e.data) : null;
            if (op && op.status !== 'running' && op.status !== 'queued') return op;
          }
          throw new Error(`the event stream of ${url.pathname} ended early (${res.statusCode})`);
        })().then(
          (op) => (req.destroy(), resolve(op)),
          (err) => (req.destroy(), reject(err)),
        );
      },
    );
    req.on('error', reject).end();
  });
}

/** A multipart/form-data body with the ZIP in the part `file`. */
function multipart(zip: Buffer): { body: Buffer; type: string } {
  const boundary = `----hoistbench${randomBytes(8).toString('hex')}`;
  const head =
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; ` +
    `filename="site.zip"\r\ncontent-type: application/zip\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), zip, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

const sleep = (n: number) => new Promise((r) => setTimeout(r, n));

const json = async (res: Promise<{ status: number; body: string }>) => {
  const { status, body } = await res;
  return { status, body: JSON.parse(body) };
};
const post = (url: URL, headers: Record<string, string>, body: Buffer) =>
  json(request(url, { method: 'POST', headers: { ...headers, 'content-length': body.length }, body }));

/** What the client keeps between calls. */
let session: {
  api: string;
  edge: URL;
  auth: Record<string, string>;
  projectId: string;
  host: string;
  nodeApp: boolean;
};
let next: { marker: string; form: { body: Buffer; type: string }; zipBytes: number } | undefined;

/** The calls upload-to-live.ts makes. */
const methods = {
  /**
   * Logs in as the account upload-to-live.ts made and creates the project; resolves its host, and the number of
   * files and bytes of the static site.
   */
  async setup(api: string, edge: string, email: string, password: string, nodeApp: boolean) {
    const login = await post(
      new URL('/api/v1/auth/login', api),
      { 'content-type': 'application/json' },
      Buffer.from(JSON.stringify({ email, password })),
    );
    if (login.status !== 200) throw new Error(`login: ${login.status} ${JSON.stringify(login.body)}`);
    const auth = { authorization: `Bearer ${login.body.token}` };
    const project = await post(
      new URL('/api/v1/projects/', api),
      { ...auth, 'content-type': 'application/json' },
      Buffer.from(JSON.stringify({ name: 'bench site' })),
    );
    if (project.status !== 201) throw new Error(`project: ${project.status} ${JSON.stringify(project.body)}`);
    const host = new URL(project.body.url).host;
    session = { api, edge: new URL(edge), auth, projectId: project.body.id, host, nodeApp };
    return { host, files: FILES, siteBytes: SITE_BYTES };
  },
  /** Makes the next deploy's ZIP (outside the measured time); resolves its size. */
  async prepare(i: number) {
    const marker = `release-${i}-${randomBytes(4).toString('hex')}`;
    const zip = await (session.nodeApp ? nodeAppZip : siteZip)(marker);
    next = { marker, form: multipart(zip), zipBytes: zip.length };
    return zip.length;
  },
  /**
   * Uploads the prepared ZIP, follows the operation until it ends and polls the edge until it serves the new
   * marker; resolves the operation's final state and the times (performance.now of this process) of the upload's
   * start, the 202, `succeeded` seen and the new page served.
   */
  async deploy(i: number) {
    const { marker, form } = next!;
    const { api, edge, auth, projectId, host } = session;
    const t0 = performance.now();
    const accepted = await post(
      new URL(`/api/v1/projects/${projectId}/local-to-live`, api),
      { ...auth, 'content-type': form.type },
      form.body,
    );
    if (accepted.status !== 202) throw new Error(`upload ${i}: ${accepted.status} ${JSON.stringify(accepted.body)}`);
    const t1 = performance.now();
    const op = await follow(new URL(`/api/v1/operations/${accepted.body.operation.id}`, api), auth);
    if (op.status !== 'succeeded')
      throw new Error(`deploy ${i} ${op.status}: ${JSON.stringify(op.error ?? op.stages)}`);
    const t2 = performance.now();
    while (!(await request(edge, { headers: { host } })).body.includes(marker)) await sleep(1);
    const t3 = performance.now();
    return { op, t0, t1, t2, t3 };
  },
};

export type UploadClient = typeof methods;

process.on('message', (msg: { id: number; method: keyof UploadClient; args: unknown[] }) => {
  void (methods[msg.method] as (...args: unknown[]) => Promise<unknown>)(...msg.args).then(
    (result) => process.send!({ id: msg.id, result }),
    (err: Error) => process.send!({ id: msg.id, error: err.stack ?? String(err) }),
  );
});
process.on('disconnect', () => {
  agent.destroy();
  process.exit(0);
});
