import type { HoistConfig } from '../config/schema.js';
import { ENTITLEMENT_SERVICE } from '../core/billing/entitlement-service.js';
import { ENVIRONMENT_SERVICE } from '../core/environment/environment-service.js';
import { DEPLOYMENT_SERVICE, DeploymentService } from '../core/deployments/deployment-service.js';
import { OperationStore } from '../core/deployments/operation-store.js';
import { OPERATION_VIEWS, OperationViews } from '../core/deployments/operation-views.js';
import { RECORDS_SERVICE, RecordsService } from '../core/deployments/records-service.js';
import { Redaction, REDACTION } from '../core/deployments/redaction.js';
import { StageRunner } from '../core/deployments/stage-runner.js';
import { AnalyzeStage } from '../core/deployments/stages/analyze.js';
import { BuildStage } from '../core/deployments/stages/build.js';
import { DeployStage } from '../core/deployments/stages/deploy.js';
import { IDEMPOTENCY_SERVICE, IdempotencyService } from '../core/idempotency/idempotency-service.js';
import { ANALYZERS } from '../core/ports/analyzer.js';
import { ARCHIVE } from '../core/ports/archive.js';
import { BUILDERS } from '../core/ports/builder.js';
import { CLOCK } from '../core/ports/clock.js';
import { DEPLOYER } from '../core/ports/deployer.js';
import { QUEUE } from '../core/ports/queue.js';
import { STORAGE } from '../core/ports/storage.js';
import { PROJECT_SERVICE } from '../core/projects/project-service.js';
import { CONFIG, ENTITY_MANAGER } from '../core/tokens.js';
import { UPLOAD_SESSION_SERVICE, UploadSessionService } from '../core/uploads/upload-session-service.js';
import type { ServiceDefinition } from './services.js';

export const OPERATION_STORE = Symbol.for('hoist.OperationStore');
export const STAGE_RUNNER = Symbol.for('hoist.StageRunner');

/** The core services of the deployment chain. */
export const deploymentServices: ServiceDefinition[] = [
  { token: OPERATION_STORE, create: (get) => new OperationStore(get(ENTITY_MANAGER), get(QUEUE), get(CLOCK)) },
  { token: DEPLOYMENT_SERVICE, create: (get) => new DeploymentService(get(ENTITY_MANAGER), get(OPERATION_STORE), get(ENTITLEMENT_SERVICE), get(CLOCK)) },
  { token: REDACTION, create: (get) => new Redaction(get<HoistConfig>(CONFIG).dataDir, get(ENVIRONMENT_SERVICE)) },
  { token: RECORDS_SERVICE, create: (get) => new RecordsService(get(ENTITY_MANAGER), get(PROJECT_SERVICE), get(DEPLOYMENT_SERVICE), get(STORAGE), get(REDACTION)) },
  { token: IDEMPOTENCY_SERVICE, create: (get) => new IdempotencyService(get(ENTITY_MANAGER), get(CLOCK)) },
  {
    token: UPLOAD_SESSION_SERVICE,
    create: (get) => new UploadSessionService(get(ENTITY_MANAGER), get(STORAGE), get(ENTITLEMENT_SERVICE), get(PROJECT_SERVICE), get(CLOCK), get<HoistConfig>(CONFIG)),
  },
  { token: OPERATION_VIEWS, create: (get) => new OperationViews(get(ENTITY_MANAGER), get(QUEUE), get(CLOCK), get<HoistConfig>(CONFIG)) },
  {
    token: STAGE_RUNNER,
    create: (get) => {
      const config = get<HoistConfig>(CONFIG);
      const em = get<never>(ENTITY_MANAGER);
      const build = new BuildStage(em, get(STORAGE), get(ARCHIVE), get(BUILDERS), get(ENVIRONMENT_SERVICE), config.dataDir, get(REDACTION));
      return new StageRunner(
        em,
        get(OPERATION_STORE),
        {
          analyze: new AnalyzeStage(get(STORAGE), get(ARCHIVE), get(ANALYZERS), config.dataDir),
          build,
          deploy: new DeployStage(em, get(DEPLOYER), build, get(ENVIRONMENT_SERVICE), config),
        },
        // Heartbeats keep both the queue's lease (visibility timeout / ack wait) and the stage's claim alive.
        Math.max(200, Math.min(5000, (config.stuckAfterSeconds * 1000) / 6, (config.queueVisibilitySeconds * 1000) / 3)),
        config.queueVisibilitySeconds * 1000,
        get(REDACTION),
      );
    },
  },
];
