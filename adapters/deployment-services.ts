import { ENTITLEMENT_SERVICE, EntitlementService } from '../core/billing/entitlement-service.js';
import { ENVIRONMENT_SERVICE } from '../core/environment/environment-service.js';
import { DEPLOY_HOOKS, DeployHooks } from '../core/deployments/deploy-hooks.js';
import { DEPLOYMENT_SERVICE, DeploymentService } from '../core/deployments/deployment-service.js';
import { OperationStore } from '../core/deployments/operation-store.js';
import { AccountShare } from '../core/deployments/account-share.js';
import { LOG_CHUNKS, LogChunks } from '../core/deployments/log-chunks.js';
import { FILE_RETENTION, FileRetention } from '../core/deployments/file-retention.js';
import { LOG_RETENTION, LogRetention } from '../core/deployments/log-retention.js';
import { USAGE_SERVICE, UsageService } from '../core/usage/usage-service.js';
import { OPERATION_EVENTS, OperationEvents } from '../core/deployments/operation-events.js';
import { OPERATION_LIST, OperationList } from '../core/deployments/operation-list.js';
import { OPERATION_VIEWS, OperationViews } from '../core/deployments/operation-views.js';
import { RECORDS_SERVICE, RecordsService } from '../core/deployments/records-service.js';
import { Redaction, REDACTION } from '../core/deployments/redaction.js';
import { HOST_ROUTES } from '../core/deployments/host-routes.js';
import { RoutingTable } from '../core/deployments/routing-table.js';
import { PREVIEWS, Previews } from '../core/deployments/previews.js';
import { RECOVERY, Recovery } from '../core/deployments/recovery.js';
import { RETIREMENT, Retirement } from '../core/deployments/retirement.js';
import { DeploymentReports, RELEASE_REPORTS } from '../core/deployments/release-reports.js';
import { OrmBuildRepository } from '../core/deployments/repositories/build-repository.js';
import { OrmDeploymentRepository } from '../core/deployments/repositories/deployment-repository.js';
import { OrmVersionRepository } from '../core/deployments/repositories/version-repository.js';
import { StageRunner } from '../core/deployments/stage-runner.js';
import { DataDirWorkspaces } from '../core/deployments/workspace.js';
import { AnalyzeStage } from '../core/deployments/stages/analyze.js';
import { BuildStage } from '../core/deployments/stages/build.js';
import { BuildCaches } from '../core/deployments/build-cache.js';
import { DeployStage } from '../core/deployments/stages/deploy.js';
import { UPLOAD_DEPLOYMENTS, UploadDeployments } from '../core/deployments/upload-deployments.js';
import { IDEMPOTENCY_SERVICE, IdempotencyService } from '../core/idempotency/idempotency-service.js';
import { CHANGE_FEED } from '../core/ports/change-feed.js';
import { CIPHER } from '../core/ports/cipher.js';
import { ANALYZERS } from '../core/ports/analyzer.js';
import { ARCHIVE } from '../core/ports/archive.js';
import { BUILDERS } from '../core/ports/builder.js';
import { CLOCK } from '../core/ports/clock.js';
import { DEPLOYER } from '../core/ports/deployer.js';
import { QUEUE } from '../core/ports/queue.js';
import { STORAGE } from '../core/ports/storage.js';
import { WORKSPACES } from '../core/ports/workspaces.js';
import { PROJECT_SERVICE } from '../core/projects/project-service.js';
import { CONFIG, defineService, ENTITY_MANAGER, LOGGER, token, type ServiceDefinition } from '../core/tokens.js';
import { UPLOAD_SESSION_SERVICE, UploadSessionService } from '../core/uploads/upload-session-service.js';
import { WEBHOOK_DELIVERIES, WebhookDeliveries } from '../core/webhooks/webhook-deliveries.js';
import { WEBHOOK_SERVICE, WebhookService } from '../core/webhooks/webhook-service.js';
import { WEBHOOK_SENDER } from '../core/ports/webhook-sender.js';

export const OPERATION_STORE = token<OperationStore>('hoist.OperationStore');
export const ACCOUNT_SHARE = token<AccountShare>('hoist.AccountShare');
export const STAGE_RUNNER = token<StageRunner>('hoist.StageRunner');

/** The core services of the deployment chain. */
export const deploymentServices: ServiceDefinition[] = [
  defineService({
    provides: ACCOUNT_SHARE,
    deps: { em: ENTITY_MANAGER, queue: QUEUE, config: CONFIG },
    create: (d) => new AccountShare(d.em, d.queue, d.config.reservedWorkerSlots),
  }),
  defineService({
    provides: OPERATION_STORE,
    deps: {
      em: ENTITY_MANAGER,
      queue: QUEUE,
      clock: CLOCK,
      changes: CHANGE_FEED,
      webhooks: WEBHOOK_DELIVERIES,
      share: ACCOUNT_SHARE,
    },
    create: (d) => new OperationStore(d.em, d.queue, d.clock, d.changes, d.webhooks, d.share),
  }),
  defineService({
    provides: DEPLOY_HOOKS,
    deps: {
      em: ENTITY_MANAGER,
      projects: PROJECT_SERVICE,
      deployments: DEPLOYMENT_SERVICE,
      entitlements: ENTITLEMENT_SERVICE,
      clock: CLOCK,
    },
    create: (d) => new DeployHooks(d.em, d.projects, d.deployments, d.entitlements, d.clock),
  }),
  defineService({
    provides: WEBHOOK_DELIVERIES,
    deps: {
      em: ENTITY_MANAGER,
      queue: QUEUE,
      clock: CLOCK,
      sender: WEBHOOK_SENDER,
      environment: ENVIRONMENT_SERVICE,
      views: OPERATION_VIEWS,
    },
    create: (d) => new WebhookDeliveries(d.em, d.queue, d.clock, d.sender, d.environment, d.views),
  }),
  defineService({
    provides: WEBHOOK_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      projects: PROJECT_SERVICE,
      entitlements: ENTITLEMENT_SERVICE,
      environment: ENVIRONMENT_SERVICE,
      deliveries: WEBHOOK_DELIVERIES,
      clock: CLOCK,
      config: CONFIG,
    },
    create: (d) =>
      new WebhookService(
        d.em,
        d.projects,
        d.entitlements,
        d.environment,
        d.deliveries,
        d.clock,
        d.config.webhookPrivateAddresses,
      ),
  }),
  defineService({
    provides: DEPLOYMENT_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      store: OPERATION_STORE,
      entitlements: ENTITLEMENT_SERVICE,
      clock: CLOCK,
      log: LOGGER,
      share: ACCOUNT_SHARE,
      webhooks: WEBHOOK_DELIVERIES,
      files: FILE_RETENTION,
    },
    create: (d) => new DeploymentService(d.em, d.store, d.entitlements, d.clock, d.log, d.share, d.webhooks, d.files),
  }),
  defineService({
    provides: REDACTION,
    deps: { config: CONFIG, environment: ENVIRONMENT_SERVICE },
    create: (d) => new Redaction(d.config.dataDir, d.environment),
  }),
  defineService({
    provides: RELEASE_REPORTS,
    deps: { em: ENTITY_MANAGER, redaction: REDACTION, clock: CLOCK, log: LOGGER, changes: CHANGE_FEED },
    create: (d) => new DeploymentReports(d.em, d.redaction, d.clock, d.log, d.changes),
  }),
  defineService({
    provides: WORKSPACES,
    deps: { config: CONFIG, log: LOGGER },
    create: (d) => new DataDirWorkspaces(d.config.dataDir, d.log),
  }),
  defineService({
    provides: RECORDS_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      projects: PROJECT_SERVICE,
      deployments: DEPLOYMENT_SERVICE,
      storage: STORAGE,
      redaction: REDACTION,
      deployer: DEPLOYER,
    },
    create: (d) => new RecordsService(d.em, d.projects, d.deployments, d.storage, Boolean(d.deployer.resume)),
  }),
  defineService({
    provides: IDEMPOTENCY_SERVICE,
    deps: { em: ENTITY_MANAGER, clock: CLOCK },
    create: (d) => new IdempotencyService(d.em, d.clock),
  }),
  defineService({
    provides: UPLOAD_SESSION_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      storage: STORAGE,
      entitlements: ENTITLEMENT_SERVICE,
      projects: PROJECT_SERVICE,
      clock: CLOCK,
      config: CONFIG,
      log: LOGGER,
    },
    create: (d) => new UploadSessionService(d.em, d.storage, d.entitlements, d.projects, d.clock, d.config, d.log),
  }),
  defineService({
    provides: UPLOAD_DEPLOYMENTS,
    deps: {
      projects: PROJECT_SERVICE,
      environment: ENVIRONMENT_SERVICE,
      deployments: DEPLOYMENT_SERVICE,
      idempotency: IDEMPOTENCY_SERVICE,
      sessions: UPLOAD_SESSION_SERVICE,
      previews: PREVIEWS,
      storage: STORAGE,
      cipher: CIPHER,
      log: LOGGER,
    },
    create: (d) => new UploadDeployments(d),
  }),
  defineService({
    provides: OPERATION_VIEWS,
    deps: { em: ENTITY_MANAGER, queue: QUEUE, clock: CLOCK, config: CONFIG, changes: CHANGE_FEED },
    create: (d) => new OperationViews(d.em, d.queue, d.clock, d.config, d.changes),
  }),
  defineService({
    provides: LOG_CHUNKS,
    deps: { em: ENTITY_MANAGER, clock: CLOCK, changes: CHANGE_FEED, storage: STORAGE },
    create: (d) => new LogChunks(d.em, d.clock, d.changes, d.storage),
  }),
  defineService({
    provides: USAGE_SERVICE,
    deps: { em: ENTITY_MANAGER, projects: PROJECT_SERVICE, clock: CLOCK },
    create: (d) => new UsageService(d.em, d.projects, d.clock),
  }),
  defineService({
    provides: LOG_RETENTION,
    deps: { em: ENTITY_MANAGER, storage: STORAGE, clock: CLOCK, config: CONFIG },
    create: (d) => new LogRetention(d.em, d.storage, d.clock, d.config.buildLogLineDays),
  }),
  defineService({
    provides: FILE_RETENTION,
    deps: { em: ENTITY_MANAGER, storage: STORAGE, clock: CLOCK, config: CONFIG },
    create: (d) => new FileRetention(d.em, d.storage, d.clock, d.config.deploymentFileDays, d.config.buildLogDays),
  }),
  defineService({
    provides: OPERATION_EVENTS,
    deps: { em: ENTITY_MANAGER, queue: QUEUE, clock: CLOCK, config: CONFIG, logs: LOG_CHUNKS, changes: CHANGE_FEED },
    create: (d) =>
      new OperationEvents(d.em, (em) => new OperationViews(em, d.queue, d.clock, d.config), d.logs, d.changes),
  }),
  defineService({
    provides: OPERATION_LIST,
    deps: { em: ENTITY_MANAGER, views: OPERATION_VIEWS },
    create: (d) => new OperationList(d.em, d.views),
  }),
  defineService({
    provides: STAGE_RUNNER,
    deps: {
      em: ENTITY_MANAGER,
      store: OPERATION_STORE,
      storage: STORAGE,
      archive: ARCHIVE,
      analyzers: ANALYZERS,
      builders: BUILDERS,
      deployer: DEPLOYER,
      reports: RELEASE_REPORTS,
      environment: ENVIRONMENT_SERVICE,
      redaction: REDACTION,
      clock: CLOCK,
      config: CONFIG,
      log: LOGGER,
      logChunks: LOG_CHUNKS,
      changes: CHANGE_FEED,
      routes: HOST_ROUTES,
    },
    create: (d) => {
      const { em, config } = d;
      const builds = new OrmBuildRepository(em, d.clock);
      return new StageRunner(
        em,
        d.store,
        {
          analyze: new AnalyzeStage(
            new OrmVersionRepository(em, d.clock),
            d.storage,
            d.archive,
            d.analyzers,
            config.dataDir,
          ),
          build: new BuildStage(
            builds,
            d.storage,
            d.archive,
            d.builders,
            d.environment,
            config.dataDir,
            d.redaction,
            d.clock,
            d.log,
            d.logChunks,
            config.buildCacheMb > 0
              ? new BuildCaches(config.dataDir, Math.min(config.buildCacheMb, config.buildDiskMb / 2) * 1048576, d.log)
              : undefined,
          ),
          deploy: new DeployStage(
            d.deployer,
            d.reports,
            builds,
            new OrmDeploymentRepository(em, d.clock),
            d.environment,
            config,
            d.log,
            d.changes,
            d.routes instanceof RoutingTable ? d.routes : undefined,
            // A fork of its own: the worker runs outside any request context.
            async (accountId) => (await new EntitlementService(em.fork()).planOf(accountId)).limits,
          ),
        },
        // Heartbeats keep both the queue's lease (visibility timeout / ack wait) and the stage's claim alive.
        Math.max(
          200,
          Math.min(5000, (config.stuckAfterSeconds * 1000) / 6, (config.queueVisibilitySeconds * 1000) / 3),
        ),
        config.queueVisibilitySeconds * 1000,
        d.log,
        d.redaction,
      );
    },
  }),
  defineService({
    provides: PREVIEWS,
    deps: { em: ENTITY_MANAGER, deployer: DEPLOYER, clock: CLOCK, log: LOGGER, changes: CHANGE_FEED },
    create: (d) => new Previews(d.em, d.deployer, d.clock, d.log, d.changes),
  }),
  defineService({
    provides: RETIREMENT,
    deps: { em: ENTITY_MANAGER, deployer: DEPLOYER, clock: CLOCK, log: LOGGER },
    create: (d) => new Retirement(d.em, d.deployer, d.clock, d.log),
  }),
  defineService({
    provides: RECOVERY,
    deps: {
      em: ENTITY_MANAGER,
      store: OPERATION_STORE,
      deployer: DEPLOYER,
      reports: RELEASE_REPORTS,
      environment: ENVIRONMENT_SERVICE,
      config: CONFIG,
      retirement: RETIREMENT,
      log: LOGGER,
    },
    create: (d) =>
      new Recovery(d.em, d.store, d.deployer, d.reports, d.environment, d.config.dataDir, d.retirement, d.log),
  }),
  defineService({
    provides: HOST_ROUTES,
    deps: { em: ENTITY_MANAGER, changes: CHANGE_FEED, config: CONFIG, log: LOGGER },
    // Loaded by the edge when it starts (buildEdge): other roles never read it.
    create: (d) =>
      new RoutingTable(d.em, d.changes, {
        appsDomain: d.config.appsDomain,
        revalidateMs: d.config.routesRevalidateSeconds * 1000,
        log: d.log,
      }),
  }),
];
