'use strict';
// Entry point of every Hoist release image (copied to /hoist): `static` serves /app on port 8080;
// `node <command>` runs the app's start command with PORT=8081 on the container's loopback and
// relays port 8080 of every interface to it, so an app that listens on 127.0.0.1 (as it may on
// the local deployer) is reachable from the edge all the same. The container ends with the app.
const net = require('node:net');
const { spawn } = require('node:child_process');

const PUBLIC_PORT = 8080;
const APP_PORT = 8081;
const [mode, command] = process.argv.slice(2);

if (mode === 'static') {
  // The site's _redirects and _headers rules, as Hoist checked them (none when it has no such file). A file that
  // cannot be read stops the release (it does not go live without its rules).
  let rules = {};
  try {
    rules = JSON.parse(require('node:fs').readFileSync(`${__dirname}/site-rules.json`, 'utf8'));
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  require('./static-server.cjs')
    .createStaticServer('/app', process.env.HOIST_RELEASE || 'release', rules)
    .listen(PUBLIC_PORT, '0.0.0.0');
} else {
  const app = spawn('sh', ['-c', command], {
    stdio: 'inherit',
    env: { ...process.env, PORT: String(APP_PORT), HOST: '127.0.0.1' },
  });
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => app.kill(signal));
  app.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  net
    .createServer((client) => {
      const upstream = net.connect(APP_PORT, '127.0.0.1');
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
      client.pipe(upstream).pipe(client);
    })
    .listen(PUBLIC_PORT, '0.0.0.0');
}
