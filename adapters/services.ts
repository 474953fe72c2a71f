import { ACCOUNT_SERVICE, AccountService } from '../core/accounts/account-service.js';
import { AUTH_SERVICE, AuthService } from '../core/auth/auth-service.js';
import { ACCESS_REQUEST_SERVICE, AccessRequestService } from '../core/access-requests/access-request-service.js';
import { MEMBER_SERVICE, MemberService } from '../core/accounts/member-service.js';
import { ACCESS_GRANT_SERVICE, AccessGrantService } from '../core/access/access-grant-service.js';
import { SITE_ACCESS_SERVICE, SiteAccessService } from '../core/access/site-access-service.js';
import { AGENT_AUTH_SERVICE, AgentAuthService } from '../core/auth/agent-auth-service.js';
import { OAUTH_SERVICE, OAuthService } from '../core/auth/oauth-service.js';
import { EMAIL_VERIFICATION_SERVICE, EmailVerificationService } from '../core/auth/email-verification-service.js';
import { OneTimeTokens } from '../core/auth/one-time-tokens.js';
import { PASSWORD_RECOVERY_SERVICE, PasswordRecoveryService } from '../core/auth/password-recovery-service.js';
import { RateLimiter } from '../core/auth/rate-limiter.js';
import { SESSION_REVOCATIONS, SessionRevocations } from '../core/auth/session-revocations.js';
import { CHANGE_FEED } from '../core/ports/change-feed.js';
import { ARCHIVE } from '../core/ports/archive.js';
import { CIPHER } from '../core/ports/cipher.js';
import { WORKSPACES } from '../core/ports/workspaces.js';
import { KEPT_FILES, KeptFiles } from '../core/uploads/kept-files.js';
import { UPLOAD_MANIFESTS, UploadManifests } from '../core/uploads/upload-manifests.js';
import { DEPLOYER } from '../core/ports/deployer.js';
import { MAILER } from '../core/ports/mailer.js';
import { STORAGE } from '../core/ports/storage.js';
import { CLOCK } from '../core/ports/clock.js';
import { PASSWORD_HASHER } from '../core/ports/password-hasher.js';
import { TOKEN_SERVICE } from '../core/ports/token-service.js';
import { CONFIG, defineService, ENTITY_MANAGER, LOGGER, type ServiceDefinition } from '../core/tokens.js';
import { BILLING_SERVICE, BillingService } from '../core/billing/billing-service.js';
import { ENTITLEMENT_SERVICE, EntitlementService } from '../core/billing/entitlement-service.js';
import { ENVIRONMENT_SERVICE, EnvironmentService } from '../core/environment/environment-service.js';
import { DOMAIN_CHECKER, DomainChecker } from '../core/domains/domain-checker.js';
import { DOMAIN_SERVICE, DomainService } from '../core/domains/domain-service.js';
import { DNS_RESOLVER } from '../core/ports/dns-resolver.js';
import { PROJECT_DELETER, ProjectDeleter } from '../core/projects/project-deleter.js';
import { PROJECT_SERVICE, ProjectService } from '../core/projects/project-service.js';

import { deploymentServices } from './deployment-services.js';

/** Every core service the kernel registers (each is built once, after its deps). */
export const services: ServiceDefinition[] = [
  defineService({
    provides: SESSION_REVOCATIONS,
    deps: { feed: CHANGE_FEED, config: CONFIG },
    create: (d) => new SessionRevocations(d.feed, d.config),
  }),
  defineService({
    provides: AUTH_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      hasher: PASSWORD_HASHER,
      tokens: TOKEN_SERVICE,
      clock: CLOCK,
      config: CONFIG,
      revocations: SESSION_REVOCATIONS,
    },
    create: (d) =>
      new AuthService(d.em, d.hasher, d.tokens, d.clock, d.config, new RateLimiter(d.em, d.clock), d.revocations),
  }),
  defineService({
    provides: ACCOUNT_SERVICE,
    deps: { em: ENTITY_MANAGER, hasher: PASSWORD_HASHER, clock: CLOCK, changes: CHANGE_FEED },
    create: (d) => new AccountService(d.em, d.hasher, d.clock, d.changes),
  }),
  defineService({
    provides: AGENT_AUTH_SERVICE,
    deps: { em: ENTITY_MANAGER, tokens: TOKEN_SERVICE, clock: CLOCK, revocations: SESSION_REVOCATIONS },
    create: (d) => new AgentAuthService(d.em, d.tokens, d.clock, d.revocations),
  }),
  defineService({
    provides: OAUTH_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      auth: AUTH_SERVICE,
      agents: AGENT_AUTH_SERVICE,
      tokens: TOKEN_SERVICE,
      clock: CLOCK,
      revocations: SESSION_REVOCATIONS,
    },
    create: (d) => new OAuthService(d.em, d.auth, d.agents, d.tokens, d.clock, d.revocations),
  }),
  defineService({
    provides: EMAIL_VERIFICATION_SERVICE,
    deps: { em: ENTITY_MANAGER, mailer: MAILER, clock: CLOCK, config: CONFIG, changes: CHANGE_FEED },
    create: (d) =>
      new EmailVerificationService(
        d.em,
        new OneTimeTokens(d.em, d.clock),
        d.mailer,
        d.clock,
        d.config,
        d.changes,
        new RateLimiter(d.em, d.clock),
      ),
  }),
  defineService({
    provides: PASSWORD_RECOVERY_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      mailer: MAILER,
      hasher: PASSWORD_HASHER,
      clock: CLOCK,
      config: CONFIG,
      revocations: SESSION_REVOCATIONS,
      changes: CHANGE_FEED,
      log: LOGGER,
    },
    create: (d) =>
      new PasswordRecoveryService(
        d.em,
        new OneTimeTokens(d.em, d.clock),
        d.mailer,
        d.hasher,
        d.clock,
        d.config,
        new RateLimiter(d.em, d.clock),
        d.revocations,
        d.changes,
        d.log,
      ),
  }),
  defineService({
    provides: ACCESS_REQUEST_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      accounts: ACCOUNT_SERVICE,
      recovery: PASSWORD_RECOVERY_SERVICE,
      clock: CLOCK,
      config: CONFIG,
    },
    create: (d) =>
      new AccessRequestService(d.em, d.accounts, d.recovery, d.clock, new RateLimiter(d.em, d.clock), d.config),
  }),
  defineService({
    provides: MEMBER_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      recovery: PASSWORD_RECOVERY_SERVICE,
      entitlements: ENTITLEMENT_SERVICE,
      revocations: SESSION_REVOCATIONS,
      changes: CHANGE_FEED,
      clock: CLOCK,
      config: CONFIG,
    },
    create: (d) =>
      new MemberService(
        d.em,
        d.recovery,
        d.entitlements,
        new RateLimiter(d.em, d.clock),
        d.revocations,
        d.changes,
        d.clock,
        d.config,
      ),
  }),
  defineService({
    provides: ENTITLEMENT_SERVICE,
    deps: { em: ENTITY_MANAGER },
    create: (d) => new EntitlementService(d.em),
  }),
  defineService({
    provides: BILLING_SERVICE,
    deps: { em: ENTITY_MANAGER, clock: CLOCK, changes: CHANGE_FEED, config: CONFIG },
    create: (d) => new BillingService(d.em, d.clock, d.changes, d.config),
  }),
  defineService({
    provides: PROJECT_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      entitlements: ENTITLEMENT_SERVICE,
      hasher: PASSWORD_HASHER,
      clock: CLOCK,
      changes: CHANGE_FEED,
    },
    create: (d) => new ProjectService(d.em, d.entitlements, d.hasher, d.clock, d.changes),
  }),
  defineService({
    provides: ACCESS_GRANT_SERVICE,
    deps: { em: ENTITY_MANAGER, projects: PROJECT_SERVICE, entitlements: ENTITLEMENT_SERVICE, clock: CLOCK },
    create: (d) => new AccessGrantService(d.em, d.projects, d.entitlements, d.clock),
  }),
  defineService({
    provides: SITE_ACCESS_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      hasher: PASSWORD_HASHER,
      tokens: TOKEN_SERVICE,
      mailer: MAILER,
      clock: CLOCK,
      config: CONFIG,
      cipher: CIPHER,
    },
    create: (d) =>
      new SiteAccessService(
        d.em,
        d.hasher,
        d.tokens,
        d.mailer,
        new RateLimiter(d.em, d.clock),
        d.clock,
        d.config,
        d.cipher,
      ),
  }),
  defineService({
    provides: ENVIRONMENT_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      cipher: CIPHER,
      projects: PROJECT_SERVICE,
      entitlements: ENTITLEMENT_SERVICE,
      clock: CLOCK,
    },
    create: (d) => new EnvironmentService(d.em, d.cipher, d.projects, d.entitlements, d.clock),
  }),
  defineService({
    provides: PROJECT_DELETER,
    deps: { em: ENTITY_MANAGER, deployer: DEPLOYER, storage: STORAGE, clock: CLOCK, changes: CHANGE_FEED },
    create: (d) => new ProjectDeleter(d.em, d.deployer, d.storage, d.clock, d.changes),
  }),
  defineService({
    provides: DOMAIN_CHECKER,
    deps: { em: ENTITY_MANAGER, dns: DNS_RESOLVER, clock: CLOCK, config: CONFIG, changes: CHANGE_FEED },
    create: (d) => new DomainChecker(d.em, d.dns, d.clock, d.config, d.changes),
  }),
  defineService({
    provides: DOMAIN_SERVICE,
    deps: {
      em: ENTITY_MANAGER,
      projects: PROJECT_SERVICE,
      entitlements: ENTITLEMENT_SERVICE,
      checker: DOMAIN_CHECKER,
      clock: CLOCK,
      config: CONFIG,
    },
    create: (d) => new DomainService(d.em, d.projects, d.entitlements, d.checker, d.clock, d.config),
  }),
  defineService({
    provides: KEPT_FILES,
    deps: { em: ENTITY_MANAGER, storage: STORAGE, clock: CLOCK },
    create: (d) => new KeptFiles(d.em, d.storage, d.clock),
  }),
  defineService({
    provides: UPLOAD_MANIFESTS,
    deps: {
      storage: STORAGE,
      kept: KEPT_FILES,
      archive: ARCHIVE,
      workspaces: WORKSPACES,
      clock: CLOCK,
      config: CONFIG,
      em: ENTITY_MANAGER,
      entitlements: ENTITLEMENT_SERVICE,
    },
    create: (d) =>
      new UploadManifests(d.storage, d.kept, d.archive, d.workspaces, d.clock, d.config.maxArchiveBytes, {
        limiter: new RateLimiter(d.em, d.clock),
        entitlements: d.entitlements,
      }),
  }),
  ...deploymentServices,
];
