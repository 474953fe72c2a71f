import type { FastifyReply } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';
import type { StartedDeployment } from '../../core/deployments/started-deployment.js';
import { previewUrl, projectUrl } from '../../core/projects/project-url.js';
import { Uuid } from './schemas.js';

/** The 202 schema of a write that started a deployment chain as `action`; an upload's answer names its version. */
export const queuedSchema = (action: string, upload = false) => ({
  type: 'object',
  required: ['action', 'project', 'operation', 'next_step'],
  properties: {
    action: { type: 'string', const: action },
    project: {
      type: 'object',
      required: ['url'],
      properties: { id: Uuid, name: { type: 'string' }, slug: { type: 'string' }, url: { type: 'string' } },
    },
    operation: {
      type: 'object',
      required: ['id', 'status', 'progress'],
      properties: { id: Uuid, status: { type: 'string' }, progress: { type: 'integer', minimum: 0, maximum: 100 } },
    },
    ...(upload && {
      version: { type: 'object', properties: { id: Uuid, size: { type: 'integer' }, sha256: { type: 'string' } } },
      preview: {
        type: 'object',
        description:
          'Only for an upload with target=preview: where the preview serves once the operation succeeded ' +
          '(project.url keeps serving the live release).',
        required: ['url'],
        properties: { url: { type: 'string' } },
      },
    }),
    next_step: { type: 'string' },
  },
});

/** The 202 answer of an upload that started a deployment (Local-to-Live, an upload session). */
export const Queued = queuedSchema('local_to_live_queued', true);

/**
 * Sends the 202 answer of a write that started a deployment chain (an upload, a build or deployment
 * retry) as `action`; a remembered answer replayed for a repeated Idempotency-Key says so in a header.
 */
export function sendQueued(
  reply: FastifyReply,
  config: HoistConfig,
  action: string,
  { started, replayed }: { started: StartedDeployment; replayed: boolean },
): FastifyReply {
  const { project, operation, version, preview } = started;
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.status(202).send({
    action,
    project: { ...project, url: projectUrl(config, project.slug) },
    operation,
    ...(version && { version }),
    ...(preview && { preview: { url: previewUrl(config, project.slug, operation.id) } }),
    next_step:
      `Poll GET /api/v1/operations/${operation.id} every 2-10 s (with backoff) until its status is succeeded, ` +
      `failed or canceled; then open ${preview ? 'preview.url' : 'project.url'}.`,
  });
}
