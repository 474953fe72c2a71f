import type { FastifyPluginAsync } from 'fastify';
import { RECORDS_SERVICE, type RecordsService } from '../../../core/deployments/records-service.js';
import { bearer, principalOf } from '../auth.js';
import { pageOf, recordParams } from '../record-schemas.js';
import { ReleaseQuery, ReleaseRecord, ReleaseWithNotes } from '../release-schemas.js';
import { retryRoute } from '../retry-route.js';
import { errorResponses } from '../schemas.js';
import type { RouteOptions } from './index.js';

/**
 * Releases: the history of a project's deployments that went live, the aggregate release detail, and
 * promote (instant rollback).
 */
const releases: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const records = kernel.get<RecordsService>(RECORDS_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.get<{ Params: { projectID: string }; Querystring: { cursor?: string; limit: number; target?: string } }>(
    '/projects/:projectID/releases',
    {
      schema: {
        tags: ['Releases'],
        summary: 'List the release history of a project',
        description:
          'Deployments that went live (the current one has live: true; earlier ones are ' +
          'superseded), newest first, cursor-paginated: ' +
          'pass next_cursor back unchanged as cursor until it is null. Each release carries its ' +
          'provenance (source, started_by, archive_sha256), its target and whether it is promotable; ' +
          '`target` filters by target (production, or preview: previews, which went up on their own hosts). ' +
          'A project of another ' +
          'account answers 404 like a missing one.',
        security: bearer,
        params: recordParams(),
        querystring: ReleaseQuery,
        response: { 200: pageOf('releases', ReleaseRecord), ...errorResponses(400, 401, 404) },
      },
    },
    async (req) => {
      const page = await records.releases(principalOf(req).accountId, req.params.projectID, req.query);
      return { releases: page.items, next_cursor: page.nextCursor };
    },
  );

  app.get<{ Params: { projectID: string; deploymentID: string } }>(
    '/projects/:projectID/releases/:deploymentID',
    {
      schema: {
        tags: ['Releases'],
        summary: 'Read a release',
        description:
          'One release (a deployment that went live) with its version (size, SHA-256, ' +
          'Analyze summary), build (status, artifact, log summary), ' +
          'deployment (status, URL, live) and timings: upload time, Analyze, Build and ' +
          "Deploy durations from the operation's stage timestamps (null for a stage that " +
          'did not run), upload-to-live total, and the notes the list shows. ' +
          "A deployment that never went live, another account's, and a malformed id answer 404.",
        security: bearer,
        params: recordParams('deploymentID'),
        response: { 200: ReleaseWithNotes, ...errorResponses(401, 404) },
      },
    },
    async (req) => records.release(principalOf(req).accountId, req.params.projectID, req.params.deploymentID),
  );

  retryRoute(app, kernel, {
    path: '/projects/:projectID/releases/:releaseID/promote',
    param: 'releaseID',
    tag: 'Releases',
    summary: 'Promote a release: make it live again (instant rollback)',
    description:
      'Makes an earlier release live again by switching the route back to it: no Analyze, no Build; the ' +
      'release runs with its own environment snapshot, from what the deployer kept (a static release: its ' +
      'files, at once; a Node.js release: started again from its kept directory or image). ' +
      'Answers 202 with a parent operation of kind promote (Analyze and Build skipped); poll it until it is ' +
      'terminal. Promoting the live release starts nothing: 202 with the operation that made it live. ' +
      'A preview that has not expired (status preview) is promoted as it runs, on every plan: the live route ' +
      'switches to it and its preview host stops serving, unless it took production- or preview-only environment ' +
      'variables: it was built and runs with the preview values, so it is refused with 409 not_promotable ' +
      '(details.reason preview_environment); deploy the same files to production instead. Any other release is ' +
      'refused with 403 plan_restricted (feature instant_rollback) when the plan lacks the capability, ' +
      '409 not_promotable (details.reason never_live, not_kept or unsupported) for a release that never ' +
      "went live, was pruned beyond the plan's release_retention or failed, and 409 deployment_in_progress " +
      '(details.operation_id) while another deployment of the project runs. An `Idempotency-Key` header ' +
      'makes the call safe to repeat: the same key and request within 24 h return the first answer; the ' +
      'same key with a different request → 422 idempotency_key_reused. ' +
      "Another account's project or release and a malformed id answer 404 like a missing one.",
    common: '',
    action: 'promote_queued',
    retry: (accountId, projectId, id, by) => records.promote(accountId, projectId, id, by),
  });
};

export default releases;
