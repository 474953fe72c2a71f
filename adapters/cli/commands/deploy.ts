import { Option, type Command } from 'commander';
import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import {
  MAX_ARCHIVE_BYTES,
  type HoistClient,
  type LocalToLiveAnswer,
  type Operation,
} from '../../../client/hoist-client.js';
import { HoistApiError } from '../../../client/errors.js';
import { ask, type Question } from '../remote/ask.js';
import { listFolder, manifestOf, zipWithin, type FolderFile } from '../remote/archive.js';
import { CliError, usage } from '../remote/cli-error.js';
import type { Connection } from '../remote/connect.js';
import { DeployView } from '../remote/deploy-view.js';
import { explain } from '../remote/explain.js';
import { defaultProjectName, findProject } from '../remote/project-ref.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import { bold, formatBytes, green, printable, printableDeep, red } from '../remote/terminal.js';

/** Archives larger than this go through a resumable upload session; smaller ones through Local-to-Live. */
export const RESUMABLE_FROM_BYTES = 16_000_000;

interface DeployOptions extends RemoteOptions {
  name?: string;
  project?: string;
  visibility?: string;
  includeNodeModules?: boolean;
  resumable?: boolean;
  preview?: boolean;
  clearCache?: boolean;
}

/** `hoist deploy [dir]`: zip a folder, upload it, follow Analyze, Build and Deploy, print the URL. */
export default function deploy(program: Command): void {
  program
    .command('deploy')
    .description(
      'deploy a folder (honouring .gitignore and .hoistignore) and follow the deployment until it is live; ' +
        '(streaming its events, the build log as it is written, where the API can; else polling); ' +
        'prints the URL. Sends a manifest of the files (path, SHA-256, size) first, then a ZIP of only those ' +
        'Hoist has not seen from this account, so a redeploy sends just what changed (a server without ' +
        'manifest uploads, or --resumable, gets the whole folder as one ZIP). Exits 0 live, 1 failed or ' +
        'canceled, 2 bad usage, 130 detached',
    )
    .argument('[dir]', 'the folder to deploy', '.')
    .option(
      '--name <name>',
      'project to create or select by name (default: the name in package.json, else the folder name)',
    )
    .option('--project <project>', 'deploy to this existing project (id, name or slug) instead')
    .addOption(
      new Option('--visibility <visibility>', 'of a project this deploy creates (default draft)').choices([
        'draft',
        'public',
        'private',
      ]),
    )
    .option(
      '--include-node-modules',
      'also upload node_modules folders (left out by default: Hoist installs dependencies)',
    )
    .option(
      '--preview',
      'deploy a preview to its own URL (<slug>--<short id>), leaving the live site as it is; it expires after ' +
        "the plan's preview_ttl_hours, and `hoist promote <releaseID>` makes it live",
    )
    .option(
      '--clear-cache',
      "build without the account's build cache (npm's downloads), which is dropped: this build leaves a new one",
    )
    .option('--resumable', `upload through a resumable upload session even under ${formatBytes(RESUMABLE_FROM_BYTES)}`)
    .option('--api <url>', 'Hoist API URL (default: HOIST_API_URL, else the one you logged in to)')
    .option(
      '--json',
      'no live view: print the operation\'s events as JSON lines ({"event": "state" | "log", "id", "data"}) as ' +
        'they come, then one JSON object with the outcome as the last line',
    )
    .action(
      remoteAction<DeployOptions, [string]>(run, {
        check: (o, dir) => {
          if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw usage(`${dir} is not a folder`);
          if (o.name !== undefined && o.project !== undefined) throw usage('Give --name or --project, not both');
        },
      }),
    );
}

async function run({ client }: Connection, o: DeployOptions, dir: string): Promise<void> {
  const view = new DeployView(Boolean(o.json));
  const listed = listFolder(dir, { includeNodeModules: o.includeNodeModules });
  for (const w of listed.warnings) view.warn(w);
  if (!listed.files.length) throw usage(`${dir} holds no files to deploy (after .gitignore and .hoistignore)`);

  const project = o.project ? await findProject(client, o.project) : null;
  const name = project ? project.name : (o.name ?? defaultProjectName(dir));
  const fields: Record<string, string> = {
    ...(project ? {} : { name, ...(o.visibility ? { visibility: o.visibility } : {}) }),
    ...(o.preview ? { target: 'preview' } : {}),
    ...(o.clearCache ? { clear_cache: 'true' } : {}),
  };
  const filename = `${basename(resolve(dir)) || 'site'}.zip`;
  const onProgress = (sent: number, total: number) => view.uploadProgress(sent, total);
  const upload = { filename, projectId: project?.id, onProgress };
  const onlyNew = o.resumable ? null : await sendOnlyNew(client, listed.files, fields, upload, view, dir);
  let queued = onlyNew?.answer;
  // Bytes of ZIP sent: the new files only, or the whole folder.
  let size = onlyNew?.bytes ?? 0;
  if (!queued) {
    // Packing stops past the largest upload any transport takes: a huge folder costs no more memory than that.
    const zip = await zipWithin(listed.files, MAX_ARCHIVE_BYTES);
    if (!zip) throw tooLarge(`over ${formatBytes(MAX_ARCHIVE_BYTES)}`, MAX_ARCHIVE_BYTES);
    size = zip.length;
    view.info(`Packed ${listed.files.length} files from ${resolve(dir)} into ${formatBytes(size)}`);
    await refuseWhenTooLarge(client, size);
    if (o.resumable || size > RESUMABLE_FROM_BYTES) {
      const session = await client.createUploadSession({
        ...(project ? { project_id: project.id } : { name }),
        ...(o.visibility && !project ? { visibility: o.visibility as 'draft' } : {}),
        ...(o.preview ? { target: 'preview' as const } : {}),
        ...(o.clearCache ? { clear_cache: true } : {}),
        transport: 'direct_storage_resumable',
        size,
        filename,
      });
      onProgress(0, size);
      queued = await client.uploadToSession(session, zip, { onProgress });
    } else {
      onProgress(0, size);
      queued = await client.localToLive(zip, fields, upload);
    }
  }
  const id = queued.operation.id;
  view.info(`Deploying ${bold(printable(queued.project.name ?? name))} (operation ${printable(id)})`);

  const op = await watch(client, id, view, Boolean(o.json), queued);
  const url = op.result?.url ?? queued.project.url;
  const outcome = {
    status: op.status,
    url: op.status === 'succeeded' ? url : null,
    project: queued.project,
    operation: {
      id,
      status: op.status,
      progress: op.progress,
      error: op.error ?? null,
      next_step: op.next_step ?? null,
    },
    archive: { bytes: size, files: listed.files.length },
  };
  if (o.json) console.log(JSON.stringify(outcome));
  if (op.status === 'succeeded') {
    const where = o.preview ? 'Preview at' : 'Live at';
    if (!o.json) console.log(process.stdout.isTTY ? `${green('✔')} ${where} ${bold(printable(url))}` : printable(url));
    return;
  }
  process.exitCode = 1;
  if (!o.json) {
    // The error may quote what the build or the app printed (a crash's last lines): it cannot drive the terminal.
    const { error, next_step, status } = printableDeep(op);
    console.error(`${red('✖')} The deployment ${status}${error ? `: ${error.code}: ${error.message}` : ''}`);
    if (next_step?.message) console.error(`Next step: ${next_step.message}`);
  }
}

// Checks the archive against the plan's archive_bytes and the largest upload any transport takes.
async function refuseWhenTooLarge(client: HoistClient, size: number): Promise<void> {
  const { plan, limits } = await client.entitlements();
  const planLimit = limits.archive_bytes ?? MAX_ARCHIVE_BYTES;
  const limit = Math.min(planLimit, MAX_ARCHIVE_BYTES);
  if (size <= limit) return;
  let hint = IGNORE_HINT;
  if (planLimit < MAX_ARCHIVE_BYTES && size <= MAX_ARCHIVE_BYTES) {
    const { plans } = (await client.api.GET('/api/v1/billing/plans')).data ?? { plans: [] };
    const better = (plans as { id?: string; limits?: { archive_bytes?: number } }[]).find(
      (p) => (p.limits?.archive_bytes ?? 0) >= size,
    );
    if (better?.id)
      hint +=
        ` The ${better.id} plan allows ` +
        `${formatBytes(Math.min(better.limits!.archive_bytes!, MAX_ARCHIVE_BYTES))}.`;
  }
  throw tooLarge(`${formatBytes(size)} (${size} bytes)`, limit, plan, hint, size);
}

const IGNORE_HINT = ' Leave files out with a .hoistignore file (same syntax as .gitignore).';

// The error of an archive past `limit` (of `plan` when it is the plan's), before anything was uploaded.
function tooLarge(what: string, limit: number, plan?: string, hint = IGNORE_HINT, size?: number): CliError {
  return new CliError(
    `The archive is ${what}; the limit is ${formatBytes(limit)} (${limit} bytes${plan ? `, plan ${plan}` : ''}). ` +
      `Nothing was uploaded.${hint}`,
    1,
    'archive_too_large',
    { size: size ?? null, limit, ...(plan ? { plan } : {}) },
  );
}

/**
 * Polls the operation until it is terminal, showing it. Ctrl-C on a terminal asks whether to
 * cancel (y: cancel through the API, then follow it to canceled), keep watching (n) or detach (d,
 * or Ctrl-C again: exit 130, the deployment goes on); without a terminal it detaches at once.
 * The view waits while the question is open; once answered, the question is erased and the view
 * drawn again in place, and a later Ctrl-C asks again.
 */
async function watch(
  client: HoistClient,
  id: string,
  view: DeployView,
  json: boolean,
  queued: LocalToLiveAnswer,
): Promise<Operation> {
  let question: Question | null = null;
  let asking: Promise<void> | null = null;
  const detach = () => {
    const hint =
      `The deployment goes on: follow it with \`hoist operations show ${id}\`, stop it ` +
      `with \`hoist operations cancel ${id}\`.`;
    if (json)
      console.log(JSON.stringify({ status: 'detached', project: queued.project, operation: { id }, next_step: hint }));
    else console.error(`Detached. ${hint}`);
    process.exit(130);
  };
  const onSigint = () => {
    if (asking) return;
    if (!process.stdin.isTTY) return detach();
    view.pause();
    question = ask('\nCancel the deployment? [y]es / [n]o, keep watching / [d]etach: ', { erase: true });
    asking = question.answer
      .then(async (answer) => {
        if (answer === null || answer.startsWith('d')) {
          if (answer === null && question === null) return; // the operation ended while asking
          return detach();
        }
        if (answer.startsWith('y')) {
          view.info('Canceling…');
          await client.cancel(id).catch((err) => view.warn(printable(explain(err).message)));
        }
      })
      .finally(() => {
        question = null;
        asking = null;
        view.resume();
      });
  };
  process.on('SIGINT', onSigint);
  try {
    // Live events when the API streams them (log lines as they are written); else polling.
    const streamed = await client
      .follow(id, (e) => {
        if (json) console.log(JSON.stringify(e));
        else if (e.event === 'state') view.update(e.data);
        else view.log(e.data.lines);
      })
      .catch(() => null);
    if (!streamed) view.polling();
    const op =
      streamed ??
      (await client.waitForOperation(id, {
        minMs: 500,
        maxMs: 3000,
        onUpdate: (op) => view.update(op),
        changeKey: (op) => `${op.status}|${op.progress}|${op.current_stage}|${op.build_log?.last_lines?.at(-1)}`,
      }));
    if (question) {
      const open = question as Question;
      question = null;
      open.close();
      await asking;
    }
    view.update(op);
    view.finish();
    return op;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/**
 * Sends the folder's manifest, then a ZIP of only the files the server has not seen from this
 * account (one per content), with the manifest's id. Null when the server has no manifest uploads, when the
 * files add up to more than an upload may hold (the whole folder's ZIP, compressed, may be within it), or when the
 * new files are large enough for a resumable upload of the whole folder.
 */
async function sendOnlyNew(
  client: HoistClient,
  files: FolderFile[],
  fields: Record<string, string>,
  upload: { filename: string; projectId?: string; onProgress: (sent: number, total: number) => void },
  view: DeployView,
  dir: string,
): Promise<{ answer: LocalToLiveAnswer; bytes: number } | null> {
  const entries = await manifestOf(files);
  const manifest = await manifestWithin(client, entries, view).catch((err: unknown) => {
    // The files add up to more than one upload may hold: the whole folder's ZIP, compressed, may not.
    if (err instanceof HoistApiError && (err.status === 413 || err.details.feature === 'archive_bytes')) return null;
    throw err;
  });
  if (!manifest) return null;
  const missing = new Set(manifest.missing);
  const fresh = files.filter((_, i) => missing.delete(entries[i].sha256));
  // Past RESUMABLE_FROM_BYTES the whole folder goes as one resumable ZIP: packing these stops there.
  const zip = fresh.length ? await zipWithin(fresh, RESUMABLE_FROM_BYTES) : null;
  if (fresh.length && !zip) return null;
  const total = entries.reduce((sum, e) => sum + e.size, 0);
  view.info(
    `Found ${files.length} files in ${resolve(dir)} (${formatBytes(total)}); ${fresh.length} new, ` +
      `sending ${formatBytes(zip?.length ?? 0)}`,
  );
  upload.onProgress(0, zip?.length ?? 0);
  const answer = await client.localToLive(zip, { ...fields, manifest_id: manifest.id }, upload);
  return { answer, bytes: zip?.length ?? 0 };
}

/** The longest `hoist deploy` waits in all for the server to take its manifest again after 429 rate_limited. */
export const MANIFEST_WAIT_MS = 90_000;

/**
 * Sends the manifest; while the server answers 429 rate_limited with a `retry_after` (seconds) that still ends
 * within `waitMs` of the first try, says so and waits it out, then sends it again. Any other answer, or a wait
 * past the bound, is thrown as it came.
 */
async function manifestWithin(
  client: HoistClient,
  entries: Awaited<ReturnType<typeof manifestOf>>,
  view: DeployView,
  waitMs = MANIFEST_WAIT_MS,
): Promise<Awaited<ReturnType<HoistClient['uploadManifest']>>> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await client.uploadManifest(entries);
    } catch (err) {
      const seconds = err instanceof HoistApiError && err.status === 429 ? Number(err.details.retry_after) : NaN;
      if (!Number.isFinite(seconds) || seconds < 0 || Date.now() + seconds * 1000 > until) throw err;
      view.info(`The server takes no more manifests for now (rate_limited); waiting ${seconds} s as it asks…`);
      await new Promise((done) => setTimeout(done, seconds * 1000));
    }
  }
}
