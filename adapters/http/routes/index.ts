import type { FastifyPluginAsync } from 'fastify';
import type { Kernel } from '../../kernel.js';
import auth from './auth.js';
import agentTokens from './agent-tokens.js';
import accessRequests from './access-requests.js';
import billing from './billing.js';
import me from './me.js';
import projects from './projects.js';
import localToLive from './local-to-live.js';
import operations from './operations.js';
import operationList from './operation-list.js';
import versions from './versions.js';
import builds from './builds.js';
import deployments from './deployments.js';
import releases from './releases.js';
import uploadSessions from './upload-sessions.js';
import uploadSessionUploads from './upload-session-uploads.js';
import uploadManifests from './upload-manifests.js';
import accessGrants from './access-grants.js';
import environment from './environment.js';
import domains from './domains.js';
import webhooks from './webhooks.js';
import deployHooks from './deploy-hooks.js';
import members from './members.js';
import usage from './usage.js';

/** Options every route plugin gets. */
export interface RouteOptions {
  kernel: Kernel;
}

/** Every route plugin, registered under /api/v1. */
export const routes: FastifyPluginAsync<RouteOptions>[] = [
  auth,
  agentTokens,
  accessRequests,
  me,
  members,
  billing,
  projects,
  localToLive,
  operations,
  operationList,
  versions,
  builds,
  deployments,
  releases,
  uploadSessions,
  uploadSessionUploads,
  uploadManifests,
  environment,
  domains,
  accessGrants,
  webhooks,
  deployHooks,
  usage,
];
