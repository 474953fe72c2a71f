import type { HoistConfig } from '../config/schema.js';
import { ACCOUNT_SERVICE, AccountService } from '../core/accounts/account-service.js';
import { AUTH_SERVICE, AuthService } from '../core/auth/auth-service.js';
import { ACCESS_REQUEST_SERVICE, AccessRequestService } from '../core/access-requests/access-request-service.js';
import { ACCESS_GRANT_SERVICE, AccessGrantService } from '../core/access/access-grant-service.js';
import { SITE_ACCESS_SERVICE, SiteAccessService } from '../core/access/site-access-service.js';
import { AGENT_AUTH_SERVICE, AgentAuthService } from '../core/auth/agent-auth-service.js';
import { EMAIL_VERIFICATION_SERVICE, EmailVerificationService } from '../core/auth/email-verification-service.js';
import { OneTimeTokens } from '../core/auth/one-time-tokens.js';
import { PASSWORD_RECOVERY_SERVICE, PasswordRecoveryService } from '../core/auth/password-recovery-service.js';
import { RateLimiter } from '../core/auth/rate-limiter.js';
import { CIPHER } from '../core/ports/cipher.js';
import { DEPLOYER } from '../core/ports/deployer.js';
import { MAILER } from '../core/ports/mailer.js';
import { STORAGE } from '../core/ports/storage.js';
import { CLOCK } from '../core/ports/clock.js';
import { PASSWORD_HASHER } from '../core/ports/password-hasher.js';
import { TOKEN_SERVICE } from '../core/ports/token-service.js';
import { CONFIG, ENTITY_MANAGER } from '../core/tokens.js';
import { BILLING_SERVICE, BillingService } from '../core/billing/billing-service.js';
import { ENTITLEMENT_SERVICE, EntitlementService } from '../core/billing/entitlement-service.js';
import { ENVIRONMENT_SERVICE, EnvironmentService } from '../core/environment/environment-service.js';
import { DOMAIN_CHECKER, DomainChecker } from '../core/domains/domain-checker.js';
import { DOMAIN_SERVICE, DomainService } from '../core/domains/domain-service.js';
import { DNS_RESOLVER } from '../core/ports/dns-resolver.js';
import { PROJECT_DELETER, ProjectDeleter } from '../core/projects/project-deleter.js';
import { PROJECT_SERVICE, ProjectService } from '../core/projects/project-service.js';

import { deploymentServices } from './deployment-services.js';

/** A core service binding: its token and a factory that gets its dependencies by token. */
export interface ServiceDefinition {
  token: symbol;
  create(get: <T>(token: symbol) => T): unknown;
}

/** Every core service the kernel registers (each is built once, on first use). */
export const services: ServiceDefinition[] = [
  {
    token: AUTH_SERVICE,
    create: (get) =>
      new AuthService(get(ENTITY_MANAGER), get(PASSWORD_HASHER), get(TOKEN_SERVICE), get(CLOCK), get<HoistConfig>(CONFIG), new RateLimiter(get(ENTITY_MANAGER), get(CLOCK))),
  },
  { token: ACCOUNT_SERVICE, create: (get) => new AccountService(get(ENTITY_MANAGER), get(PASSWORD_HASHER)) },
  { token: AGENT_AUTH_SERVICE, create: (get) => new AgentAuthService(get(ENTITY_MANAGER), get(TOKEN_SERVICE)) },
  {
    token: EMAIL_VERIFICATION_SERVICE,
    create: (get) =>
      new EmailVerificationService(get(ENTITY_MANAGER), new OneTimeTokens(get(ENTITY_MANAGER), get(CLOCK)), get(MAILER), get(CLOCK), get<HoistConfig>(CONFIG)),
  },
  {
    token: PASSWORD_RECOVERY_SERVICE,
    create: (get) =>
      new PasswordRecoveryService(
        get(ENTITY_MANAGER),
        new OneTimeTokens(get(ENTITY_MANAGER), get(CLOCK)),
        get(MAILER),
        get(PASSWORD_HASHER),
        get(CLOCK),
        get<HoistConfig>(CONFIG),
        new RateLimiter(get(ENTITY_MANAGER), get(CLOCK)),
      ),
  },
  {
    token: ACCESS_REQUEST_SERVICE,
    create: (get) =>
      new AccessRequestService(get(ENTITY_MANAGER), get(ACCOUNT_SERVICE), get(PASSWORD_RECOVERY_SERVICE), get(CLOCK), new RateLimiter(get(ENTITY_MANAGER), get(CLOCK)), get<HoistConfig>(CONFIG)),
  },
  { token: ENTITLEMENT_SERVICE, create: (get) => new EntitlementService(get(ENTITY_MANAGER)) },
  { token: BILLING_SERVICE, create: (get) => new BillingService(get(ENTITY_MANAGER)) },
  { token: PROJECT_SERVICE, create: (get) => new ProjectService(get(ENTITY_MANAGER), get(ENTITLEMENT_SERVICE), get(PASSWORD_HASHER)) },
  { token: ACCESS_GRANT_SERVICE, create: (get) => new AccessGrantService(get(ENTITY_MANAGER), get(PROJECT_SERVICE), get(ENTITLEMENT_SERVICE)) },
  {
    token: SITE_ACCESS_SERVICE,
    create: (get) =>
      new SiteAccessService(
        get(ENTITY_MANAGER),
        get(PASSWORD_HASHER),
        get(TOKEN_SERVICE),
        get(MAILER),
        new RateLimiter(get(ENTITY_MANAGER), get(CLOCK)),
        get(CLOCK),
        get<HoistConfig>(CONFIG),
      ),
  },
  { token: ENVIRONMENT_SERVICE, create: (get) => new EnvironmentService(get(ENTITY_MANAGER), get(CIPHER), get(PROJECT_SERVICE), get(ENTITLEMENT_SERVICE)) },
  { token: PROJECT_DELETER, create: (get) => new ProjectDeleter(get(ENTITY_MANAGER), get(DEPLOYER), get(STORAGE)) },
  { token: DOMAIN_CHECKER, create: (get) => new DomainChecker(get(ENTITY_MANAGER), get(DNS_RESOLVER), get(CLOCK), get<HoistConfig>(CONFIG)) },
  {
    token: DOMAIN_SERVICE,
    create: (get) => new DomainService(get(ENTITY_MANAGER), get(PROJECT_SERVICE), get(ENTITLEMENT_SERVICE), get(DOMAIN_CHECKER), get(CLOCK), get<HoistConfig>(CONFIG)),
  },
  ...deploymentServices,
];
