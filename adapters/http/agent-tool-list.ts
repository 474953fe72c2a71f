import type { Principal } from '../../core/auth/principal.js';
import { OPERATION_VIEWS } from '../../core/deployments/operation-views.js';
import { UPLOAD_SESSION_SERVICE } from '../../core/uploads/upload-session-service.js';
import { RELEASE_LOG_LINES_MAX as LOG_LINES_MAX } from '../../core/ports/deployer.js';
import { HoistError, invalid, notFound } from '../../core/errors.js';
import { isUuid } from '../../core/projects/keyset-cursor.js';
import { PROJECT_SERVICE } from '../../core/projects/project-service.js';
import { projectUrl } from '../../core/projects/project-url.js';
import type { Kernel } from '../kernel.js';
import { deployFiles, type AgentDeploy } from './agent-deploy.js';
import { runtimeLog } from './runtime-log.js';

/** The most files deploy_files takes at once. */
export const AGENT_FILES_MAX = 5000;

/** What a tool call runs with: who calls, a signal that aborts when the caller is gone, the API's public base URL. */
export interface ToolCall {
  kernel: Kernel;
  principal: Principal;
  /** Aborts when the agent's connection closes: a tool that waits stops waiting. */
  signal: AbortSignal;
  /** Where the API is reached from outside, for URLs a tool hands out. */
  base: string;
}

/** A tool of the agent-tool interface: what tools/list shows, and what tools/call runs. */
interface AgentTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  run(call: ToolCall, args: Record<string, unknown>): Promise<unknown>;
}

const text = (v: unknown, field: string, max: number): string => {
  if (typeof v !== 'string' || !v || v.length > max)
    throw invalid(`${field} must be a string of 1 to ${max} characters`, { field });
  return v;
};
/** A whole number from `min` to `max`, `fallback` when not given. */
const whole = (v: unknown, field: string, min: number, max: number, fallback: number): number => {
  const n = v ?? fallback;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
    throw invalid(`${field} must be a whole number from ${min} to ${max}`, { field });
  return n;
};
/** Whether a deploy is a preview (false when not given). */
const previewOf = (v: unknown): boolean => {
  if (v !== undefined && typeof v !== 'boolean') throw invalid('preview must be true or false', { field: 'preview' });
  return v === true;
};

/** deploy_files' arguments, checked (the schema tools/list shows, held here too: a client may skip it). */
function deployArgs(args: Record<string, unknown>): AgentDeploy {
  const project = text(args.project, 'project', 100);
  const files = args.files;
  if (!Array.isArray(files) || files.length < 1 || files.length > AGENT_FILES_MAX)
    throw invalid(`files must be a list of 1 to ${AGENT_FILES_MAX} files`, { field: 'files' });
  const checked = files.map((f: unknown, i) => {
    const file = (f ?? {}) as Record<string, unknown>;
    const encoding = (file.encoding ?? 'utf8') as 'utf8' | 'base64';
    if (encoding !== 'utf8' && encoding !== 'base64')
      throw invalid('encoding must be utf8 or base64', { field: `files[${i}].encoding` });
    if (typeof file.content !== 'string') throw invalid('content must be a string', { field: `files[${i}].content` });
    return { path: text(file.path, `files[${i}].path`, 1024), content: file.content, encoding };
  });
  const wait = whole(args.wait_seconds, 'wait_seconds', 0, 300, 120);
  return { project, files: checked, preview: previewOf(args.preview), wait_seconds: wait };
}

/** The tools, in the order tools/list shows them. */
export const AGENT_TOOLS: AgentTool[] = [
  {
    name: 'deploy_files',
    description:
      'Deploy a static site or a Node.js app from its files. Creates the project when the account has none of that ' +
      'name. Hoist analyzes, builds (npm install and the build script when package.json has one) and deploys it, ' +
      'then this answers with the operation: status succeeded and result.url, or failed with error and next_step. ' +
      'With preview: true it goes up on its own preview URL and the live site stays.',
    inputSchema: {
      type: 'object',
      required: ['project', 'files'],
      additionalProperties: false,
      properties: {
        project: { type: 'string', minLength: 1, maxLength: 100, description: 'Project name (made when missing).' },
        files: {
          type: 'array',
          minItems: 1,
          maxItems: AGENT_FILES_MAX,
          items: {
            type: 'object',
            required: ['path', 'content'],
            additionalProperties: false,
            properties: {
              path: { type: 'string', description: 'Path in the site, like index.html or src/app.js.' },
              content: { type: 'string' },
              encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
            },
          },
        },
        preview: { type: 'boolean', default: false, description: 'Deploy a preview instead of going live.' },
        wait_seconds: {
          type: 'integer',
          minimum: 0,
          maximum: 300,
          default: 120,
          description: 'How long to wait for the deployment to end (0: answer at once; then call get_operation).',
        },
      },
    },
    run: ({ kernel, principal, signal }, args) => deployFiles(kernel, principal, deployArgs(args), signal),
  },
  {
    name: 'create_upload_url',
    description:
      "Get a one-time URL to upload a ZIP of a site or app too large for deploy_files (up to the plan's archive " +
      'size): POST it as multipart/form-data with the ZIP in the part "file", e.g. `curl -F file=@site.zip ' +
      '<upload_url>`. The answer to that POST is the operation; follow it with get_operation. The URL works once, ' +
      'until expires_at, and needs no token: keep it secret.',
    inputSchema: {
      type: 'object',
      required: ['project'],
      additionalProperties: false,
      properties: {
        project: { type: 'string', minLength: 1, maxLength: 100, description: 'Project name (made when missing).' },
        preview: { type: 'boolean', default: false, description: 'Deploy a preview instead of going live.' },
      },
    },
    run: async ({ kernel, principal, base }, args) => {
      const name = text(args.project, 'project', 100);
      const preview = previewOf(args.preview);
      const created = await kernel.get(UPLOAD_SESSION_SERVICE).create(principal.accountId, {
        userId: principal.userId,
        name,
        options: preview ? { target: 'preview' } : {},
      });
      return {
        upload_url: `${base}/api/v1/upload-sessions/${created.token}/upload`,
        method: 'POST',
        expires_at: created.session.expiresAt.toISOString(),
        archive_bytes: created.maxBytes,
        how: `curl -F file=@site.zip ${base}/api/v1/upload-sessions/${created.token}/upload`,
      };
    },
  },
  {
    name: 'get_operation',
    description:
      'Read a deployment operation: status (queued, running, succeeded, failed, canceled), stages, the last build ' +
      'log lines, result.url once live, and error with next_step when it failed.',
    inputSchema: {
      type: 'object',
      required: ['operation_id'],
      additionalProperties: false,
      properties: { operation_id: { type: 'string', description: 'The operation id deploy_files answered.' } },
    },
    // Not a UUID: not found, as GET /api/v1/operations/{id} answers (PostgreSQL refuses such a query: internal error).
    run: async ({ kernel, principal }, args) => {
      const id = text(args.operation_id, 'operation_id', 100);
      if (!isUuid(id)) throw notFound('Operation');
      return kernel.get(OPERATION_VIEWS).get(principal.accountId, id);
    },
  },
  {
    name: 'get_logs',
    description:
      "Read what a project's Node.js app printed (stdout and stderr): the last lines of its live release, or of " +
      'deployment_id, oldest first, each with the time it was printed. kept is false (no lines) for a static site, ' +
      'which runs nothing.',
    inputSchema: {
      type: 'object',
      required: ['project'],
      additionalProperties: false,
      properties: {
        project: { type: 'string', minLength: 1, maxLength: 100, description: 'Project name.' },
        deployment_id: { type: 'string', description: 'A deployment of the project (default: its live release).' },
        lines: { type: 'integer', minimum: 1, maximum: LOG_LINES_MAX, default: 100, description: 'How many.' },
      },
    },
    run: async ({ kernel, principal }, args) => {
      const name = text(args.project, 'project', 100);
      const lines = whole(args.lines, 'lines', 1, LOG_LINES_MAX, 100);
      const project = await kernel.get(PROJECT_SERVICE).findByName(principal.accountId, name);
      if (!project) throw notFound(`Project ${name}`);
      const id =
        args.deployment_id === undefined ? project.liveDeploymentId : text(args.deployment_id, 'deployment_id', 100);
      if (!id) throw notFound(`A live release of ${name}`);
      return runtimeLog(kernel, principal.accountId, project.id, id, lines);
    },
  },
  {
    name: 'list_projects',
    description: "The account's projects, newest first: id, name, visibility and URL.",
    inputSchema: { type: 'object', additionalProperties: false, properties: {} },
    run: async ({ kernel, principal }) => {
      const page = await kernel.get(PROJECT_SERVICE).list(principal.accountId, { limit: 100 });
      return {
        projects: page.projects.map((p) => ({
          id: p.id,
          name: p.name,
          visibility: p.visibility,
          url: projectUrl(kernel.config, p.slug),
        })),
      };
    },
  },
  {
    name: 'whoami',
    description: 'The user and account this agent token acts for.',
    inputSchema: { type: 'object', additionalProperties: false, properties: {} },
    run: async ({ principal: p }) => ({ user: { id: p.userId, email: p.email }, account: { id: p.accountId } }),
  },
];

/**
 * Runs tool `name` with `args` for `principal`; resolves a tools/call result (its JSON as text and as structured
 * content; a HoistError as `isError` with its code and message, which the agent can act on), or undefined for a tool
 * that does not exist. Other errors are thrown.
 */
export async function callTool(call: ToolCall, name: string, args: Record<string, unknown>): Promise<unknown> {
  const tool = AGENT_TOOLS.find((t) => t.name === name);
  if (!tool) return undefined;
  try {
    const out = await tool.run(call, args);
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
  } catch (err) {
    if (!(err instanceof HoistError)) throw err;
    const error = { code: err.code, message: err.message, details: err.details ?? {} };
    return {
      content: [{ type: 'text', text: `${err.code}: ${err.message}` }],
      structuredContent: { error },
      isError: true,
    };
  }
}
