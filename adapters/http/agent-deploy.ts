import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import yazl from 'yazl';
import type { Principal } from '../../core/auth/principal.js';
import { OPERATION_VIEWS, type OperationView } from '../../core/deployments/operation-views.js';
import { UPLOAD_DEPLOYMENTS } from '../../core/deployments/upload-deployments.js';
import { invalid } from '../../core/errors.js';
import { isTerminal } from '../../core/operations/state-machine.js';
import { STORAGE } from '../../core/ports/storage.js';
import { projectUrl } from '../../core/projects/project-url.js';
import type { Kernel } from '../kernel.js';

/** One file an agent deploys: its path in the site and its content, as text or base64. */
export interface AgentFile {
  path: string;
  content: string;
  encoding?: 'utf8' | 'base64';
}

/** What deploy_files takes. */
export interface AgentDeploy {
  project: string;
  files: AgentFile[];
  preview?: boolean;
  wait_seconds?: number;
}

/** How often a deploy that waits reads its operation. */
const POLL_MS = 250;

/** The pieces a file's bytes reach yazl in: its CRC-32 (JavaScript) runs on one piece at a time, between other work. */
const PIECE_BYTES = 64 * 1024;

/**
 * The ZIP of `files` (yazl); a path yazl refuses (absolute, `..`) is invalid_request naming it. Each file goes in as a
 * stream, so yazl deflates one file at a time with one zlib context: with addBuffer each of 5,000 files started its
 * own deflate at once (about 200 KiB of zlib state each: a gigabyte for a request of 250 KB) and the CRC-32 of every
 * byte ran in one go on the API's thread.
 */
function zipOf(files: AgentFile[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const seen = new Set<string>();
  for (const [i, f] of files.entries()) {
    const field = `files[${i}].path`;
    if (seen.has(f.path)) throw invalid(`${JSON.stringify(f.path)} is given twice`, { field });
    seen.add(f.path);
    try {
      const bytes = Buffer.from(f.content, f.encoding === 'base64' ? 'base64' : 'utf8');
      const pieces = Array.from({ length: Math.ceil(bytes.length / PIECE_BYTES) }, (_, n) =>
        bytes.subarray(n * PIECE_BYTES, (n + 1) * PIECE_BYTES),
      );
      zip.addReadStream(Readable.from(pieces), f.path, { mtime: new Date(0), size: bytes.length });
    } catch (err) {
      throw invalid(`${JSON.stringify(f.path.slice(0, 200))} is not a file path in a site: ${(err as Error).message}`, {
        field,
      });
    }
  }
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}

/**
 * Deploys files an agent sends as JSON: packs them as a ZIP and starts what Local-to-Live starts for the project named
 * `project` (made when the account has none of that name), as a preview when asked; then waits up to `wait_seconds`
 * (120 by default, 0 to not wait) for the operation to end, or until `signal` aborts (the agent went away: the
 * deployment goes on, nobody waits for it). Resolves the operation as GET /api/v1/operations/{id}
 * shows it, and the project. Throws what an upload throws (invalid_request, plan_restricted, payload_too_large,
 * deployment_in_progress...).
 */
export async function deployFiles(
  kernel: Kernel,
  principal: Principal,
  input: AgentDeploy,
  signal?: AbortSignal,
): Promise<{
  project: { id: string; name: string; url: string };
  preview_url: string | null;
  operation: OperationView;
}> {
  const zip = await zipOf(input.files);
  const stored = await kernel
    .get(STORAGE)
    .put(`uploads/${randomUUID()}.zip`, Readable.from([zip]), { maxBytes: kernel.config.maxArchiveBytes });
  const { started } = await kernel.get(UPLOAD_DEPLOYMENTS).deploy({
    accountId: principal.accountId,
    target: { name: input.project },
    upload: { ...stored, filename: 'agent-files.zip' },
    options: input.preview ? { target: 'preview' } : {},
    startedBy: { user_id: principal.userId, email: principal.email },
  });
  const views = kernel.get(OPERATION_VIEWS);
  const end = Date.now() + (input.wait_seconds ?? 120) * 1000;
  let operation = await views.get(principal.accountId, started.operation.id);
  while (!isTerminal(operation) && Date.now() < end && !signal?.aborted) {
    await sleep(POLL_MS);
    operation = await views.get(principal.accountId, started.operation.id);
  }
  const url = typeof operation.result?.url === 'string' ? operation.result.url : null;
  return {
    project: {
      id: started.project.id,
      name: started.project.name,
      url: projectUrl(kernel.config, started.project.slug),
    },
    preview_url: input.preview ? url : null,
    operation,
  };
}
