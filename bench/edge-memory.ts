// Resident memory of a `hoist edge` process (node bin/hoist.js edge, the built dist/: `npm run build`
// first) serving PROJECTS live static projects on the embedded defaults: small sites (an index.html,
// a stylesheet and a 404 page, different in each project), each a release directory of links into the
// blob store with its file index and its pack of precompressed variants, written as deployer-local writes them
// (storeReleaseFiles, saveFileIndex), and the rows the Deploy stage's switch leaves (a live Deployment,
// the project pointing at it; one project in ten is private). The edge starts after they exist, so it
// loads them as it starts; each host is then asked for / once. RSS is read from /proc, with an edge on
// an empty database for comparison. Run: node --import tsx bench/edge-memory.ts [projects]
// With EDGE_SNAPSHOT=1 the edge also writes a heap snapshot (Heap.*.heapsnapshot, in the repository's
// root) once every host was served. Prints figures; never fails on the clock (or on memory).
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { boot } from '../adapters/kernel.js';
import { loadConfig } from '../config/load.js';
import { Deployment } from '../core/entities/deployment.js';
import { Project } from '../core/entities/project.js';
import { BlobStore } from '../plugins/shared/release/blob-store.js';
import { saveFileIndex, storeReleaseFiles, type ReleaseFileSource } from '../plugins/shared/release/release-files.js';
import { filler, httpRequest, startEdgeProcess, type EdgeProcess } from './bench-hoist.js';

const PROJECTS = Number(process.argv[2] ?? 1000);
const TARGET_MB = 150;

/** VmRSS and VmHWM (peak) of process `pid`, in MB. */
function rssOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** Writes PROJECTS live static projects into `dataDir`'s database and release store. */
async function createProjects(dataDir: string): Promise<{ host: string; visibility: string }[]> {
  const kernel = await boot(loadConfig({}, { dataDir, logLevel: 'silent' }));
  const store = new BlobStore(join(dataDir, 'blobs'));
  const hosts: { host: string; visibility: string }[] = [];
  try {
    const style = `body { font-family: sans-serif; }\n/* ${filler(1500)} */\n`;
    let em = kernel.orm.em.fork();
    for (let i = 0; i < PROJECTS; i++) {
      const accountId = randomUUID();
      const slug = `site-${String(i).padStart(4, '0')}`;
      const project = Object.assign(new Project(), { accountId, name: slug, slug, createdAt: new Date() });
      Object.assign(project, { updatedAt: new Date(), visibility: i % 10 === 9 ? 'private' : 'public' });
      if (project.visibility === 'private') project.accessPasswordHash = `bench-hash-${i}`;
      const deployment = Object.assign(new Deployment(), {
        accountId,
        projectId: project.id,
        versionId: randomUUID(),
        buildId: randomUUID(),
        operationId: randomUUID(),
        status: 'live',
        createdAt: new Date(),
      });
      const root = join(dataDir, 'releases', deployment.id);
      mkdirSync(join(dataDir, 'releases'), { recursive: true });
      const files: [string, string][] = [
        ['index.html', `<!doctype html><title>${slug}</title><p>${filler(2000)}</p>\n`],
        [`assets/style-${i}.css`, style],
        ['404.html', `<!doctype html><title>Not found</title><p>${slug}</p>\n`],
      ];
      const source: ReleaseFileSource = async (fn) => {
        for (const [path, text] of files)
          await fn({ path, size: Buffer.byteLength(text), executable: false, data: Buffer.from(text) });
      };
      await saveFileIndex(root, await storeReleaseFiles(store, root, source, { precompress: true }));
      deployment.target = { kind: 'static', root };
      project.liveDeploymentId = deployment.id;
      await em.insert(Deployment, deployment);
      await em.insert(Project, project);
      hosts.push({ host: `${slug}.${kernel.config.appsDomain}`, visibility: project.visibility });
      if (i % 100 === 99) em = kernel.orm.em.fork();
    }
  } finally {
    await kernel.stop();
  }
  return hosts;
}

/** Heap used and total, and external memory, from an edge's /metrics. */
function heapOf(metrics: string): string {
  const mb = (name: string) => (Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metrics)?.[1]) / 2 ** 20).toFixed(1);
  return (
    `heap used ${mb('hoist_nodejs_heap_size_used_bytes')} MB of ${mb('hoist_nodejs_heap_size_total_bytes')} MB, ` +
    `external ${mb('hoist_nodejs_external_memory_bytes')} MB`
  );
}

const load0 = loadavg()[0];
const emptyDir = mkdtempSync(join(tmpdir(), 'hoist-bench-edge-empty-'));
const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-edge-memory-'));
let edge: EdgeProcess | undefined;
try {
  // An edge with nothing to serve: what the process costs before any project.
  await boot(loadConfig({}, { dataDir: emptyDir, logLevel: 'silent' })).then((k) => k.stop());
  edge = await startEdgeProcess(emptyDir);
  await httpRequest(`${edge.origin}/`, { headers: { host: 'nobody.localhost' } });
  const empty = rssOf(edge.child.pid!);
  const emptyHeap = heapOf(await fetch(`${edge.admin}/metrics`).then((r) => r.text()));
  await edge.close();

  let t = performance.now();
  const hosts = await createProjects(dataDir);
  const created = performance.now() - t;
  t = performance.now();
  edge = await startEdgeProcess(dataDir, {}, process.env.EDGE_SNAPSHOT ? ['--heapsnapshot-signal=SIGUSR2'] : []);
  const startMs = performance.now() - t;
  const loaded = rssOf(edge.child.pid!);
  t = performance.now();
  let bad = 0;
  // Public ones answer their page; private ones the gate's sign-in page (401).
  for (const { host, visibility } of hosts) {
    const res = await httpRequest(`${edge.origin}/`, { headers: { host } });
    if (res.status !== (visibility === 'private' ? 401 : 200)) bad++;
  }
  const servedMs = performance.now() - t;
  const served = rssOf(edge.child.pid!);
  if (process.env.EDGE_SNAPSHOT) {
    // Node writes it synchronously on the signal: the next answer comes once it is written.
    edge.child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 100));
    await httpRequest(`${edge.origin}/`, { headers: { host: hosts[0].host } });
  }
  const servedHeap = heapOf(await fetch(`${edge.admin}/metrics`).then((r) => r.text()));

  console.log(`\nedge RSS with ${PROJECTS} live static projects (hoist edge, embedded defaults)`);
  console.log(`load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end`);
  console.log(
    `projects written in ${(created / 1000).toFixed(1)} s; edge listening ${startMs.toFixed(0)} ms after spawn`,
  );
  console.log(`empty edge (no project), after one request:   RSS ${empty.rss.toFixed(1)} MB, ${emptyHeap}`);
  console.log(`${PROJECTS} projects, routing table loaded:        RSS ${loaded.rss.toFixed(1)} MB`);
  console.log(
    `after each of the ${hosts.length} hosts served once (${(servedMs / 1000).toFixed(1)} s, ${bad} unexpected): ` +
      `RSS ${served.rss.toFixed(1)} MB (peak ${served.peak.toFixed(1)} MB), ${servedHeap}`,
  );
  console.log(`target: < ${TARGET_MB} MB: ${served.rss < TARGET_MB ? 'met' : 'missed'}`);
} finally {
  await edge?.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(emptyDir, { recursive: true, force: true });
}
