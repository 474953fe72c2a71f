import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ACCESS_COOKIE } from '../../adapters/edge/access-gate.js';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { mailFor, nextCode } from '../helpers/site-gate.js';
import { root } from '../helpers/cli.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const PASSWORD = 'browser test password';
const GUEST = 'browser-guest@example.com';

let h: LiveHoist;
let siteUrl: string;
const profiles: string[] = [];

/** A browser with a fresh profile of its own. */
async function browser(): Promise<BrowserContext> {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-chromium-'));
  profiles.push(dir);
  return chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    timeout: 60_000,
  });
}

const present = existsSync(CHROMIUM);
if (!present)
  console.log(
    `! skip: ${CHROMIUM} is absent, so the browser test of the access gate does not ` +
      `run (.ci/run installs Debian's chromium)`,
  );

test.before(async () => {
  if (!present) return;
  h = await liveHoist();
  const { token } = await h.login('pro');
  const zip = await zipOf({ 'index.html': '<h1>Members only</h1>', 'docs/index.html': '<h1>The private docs</h1>' });
  const res = await h.upload(token, '/api/v1/local-to-live', zip, {
    name: 'browser-gated',
    visibility: 'private',
    access_password: PASSWORD,
  });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  assert.is((await h.waitFor(token, body.operation.id)).status, 'succeeded');
  const grant = await fetch(`${h.api}/api/v1/projects/${body.project.id}/access-grants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: GUEST }),
  });
  assert.is(grant.status, 201);
  // Chromium resolves every *.localhost name to loopback.
  siteUrl = `http://${body.project.slug}.localhost:${new URL(h.edge).port}`;
});
test.after(async () => {
  await h?.close();
  for (const dir of profiles) rmSync(dir, { recursive: true, force: true });
});

test('sign in by a mailed code (a wrong one is refused first) and see the page first asked for', async () => {
  if (!present) return;
  const context = await browser();
  try {
    const page = await context.newPage();
    const gated = await page.goto(`${siteUrl}/docs/?from=mail`);
    assert.is(gated?.status(), 401);
    assert.is(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in to browser-gated');
    const shots = join(root, 'test-output');
    mkdirSync(shots, { recursive: true });
    const shot = resolve(shots, 'access-gate-sign-in.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`! screenshot of the access gate's sign-in page: ${shot}`);

    const known = (await mailFor(h.running.kernel, GUEST)).length;
    await page.getByLabel('E-mail address').fill(GUEST);
    await page.getByRole('button', { name: 'Send me a code' }).click();
    await page.getByLabel('Code').waitFor();
    const { code } = await nextCode(h.running.kernel, GUEST, known);

    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    await page.getByLabel('Code').fill(wrong);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /wrong or has expired/);
    assert.is(await page.getByText('The private docs').count(), 0);

    await page.getByLabel('Code').fill(code);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The private docs').waitFor();
    assert.is(page.url(), `${siteUrl}/docs/?from=mail`);

    const cookie = (await context.cookies()).find((c) => c.name === ACCESS_COOKIE)!;
    assert.ok(cookie, 'the access cookie is set');
    assert.is(cookie.httpOnly, true);
    assert.is(cookie.sameSite, 'Lax');
    assert.is(cookie.domain, new URL(siteUrl).hostname, 'host-only');
    assert.is(await page.evaluate(() => document.cookie.includes('hoist_access')), false, 'scripts cannot read it');
  } finally {
    await context.close();
  }
});

test('sign in by the access password', async () => {
  if (!present) return;
  const context = await browser();
  try {
    const page = await context.newPage();
    await page.goto(`${siteUrl}/`);
    await page.getByLabel('Access password').fill('not it at all');
    await page.getByRole('button', { name: 'Open the site' }).click();
    await page.getByRole('alert').waitFor();
    assert.is(await page.getByText('Members only').count(), 0);
    await page.getByLabel('Access password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Open the site' }).click();
    await page.getByText('Members only').waitFor();
    assert.is(page.url(), `${siteUrl}/`);
  } finally {
    await context.close();
  }
});

test.run();
