import { AccessCodeSchema } from './access-code.js';
import { AgentGrantSchema } from './agent-grant.js';
import { AccessGrantSchema } from './access-grant.js';
import { AccessRequestSchema } from './access-request.js';
import { AccountSchema } from './account.js';
import { BuildSchema } from './build.js';
import { BuildLogChunkSchema } from './build-log-chunk.js';
import { DeployHookSchema } from './deploy-hook.js';
import { DeploymentSchema } from './deployment.js';
import { EnvironmentSnapshotSchema } from './environment-snapshot.js';
import { EnvironmentVariableSchema } from './environment-variable.js';
import { DomainSchema } from './domain.js';
import { IdempotencyRecordSchema } from './idempotency-record.js';
import { KeptFileSchema } from './kept-file.js';
import { VersionSchema } from './version.js';
import { OneTimeTokenSchema } from './one-time-token.js';
import { OperationSchema } from './operation.js';
import { ProjectSchema } from './project.js';
import { ProjectKeySchema } from './project-key.js';
import { ProjectUsageSchema } from './project-usage.js';
import { RateHitSchema } from './rate-hit.js';
import { SessionSchema } from './session.js';
import { UserSchema } from './user.js';
import { UploadSessionSchema } from './upload-session.js';
import { WebhookDeliverySchema, WebhookSchema } from './webhook.js';

/**
 * Every entity schema of core; the database opens with these and the plugins' own (PluginDefinition.entities).
 * Timestamps (`createdAt`, `updatedAt`) have no default: whoever creates or changes a row sets them from the
 * Clock port, so a test's clock is the time every record shows.
 */
export const entities = [
  AccountSchema,
  UserSchema,
  SessionSchema,
  AgentGrantSchema,
  OneTimeTokenSchema,
  AccessRequestSchema,
  ProjectSchema,
  OperationSchema,
  RateHitSchema,
  VersionSchema,
  BuildSchema,
  BuildLogChunkSchema,
  DeploymentSchema,
  IdempotencyRecordSchema,
  UploadSessionSchema,
  KeptFileSchema,
  ProjectKeySchema,
  EnvironmentVariableSchema,
  EnvironmentSnapshotSchema,
  DomainSchema,
  AccessGrantSchema,
  AccessCodeSchema,
  WebhookSchema,
  WebhookDeliverySchema,
  DeployHookSchema,
  ProjectUsageSchema,
];
