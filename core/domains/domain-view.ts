import type { HoistConfig } from '../../config/schema.js';
import type { Domain } from '../entities/domain.js';
import { hostUrl } from '../projects/project-url.js';
import { challengeName } from './domain-states.js';

/** A DNS record the customer must create. */
export interface RecordInstruction {
  type: 'TXT' | 'CNAME';
  name: string;
  value: string;
  purpose: string;
}

/** A domain as the API shows it, with its setup instructions. */
export interface DomainView {
  id: string;
  project_id: string;
  hostname: string;
  status: string;
  message: string | null;
  url: string;
  records: RecordInstruction[];
  verified_at: string | null;
  last_checked_at: string | null;
  next_check_at: string;
  created_at: string;
  updated_at: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The API shape of `domain` of the project with `slug`. */
export function domainView(
  config: Pick<HoistConfig, 'appsDomain' | 'appsScheme' | 'appsPort' | 'edgePort'>,
  domain: Domain,
  slug: string,
): DomainView {
  return {
    id: domain.id,
    project_id: domain.projectId,
    hostname: domain.hostname,
    status: domain.status,
    message: domain.message,
    url: hostUrl(config, domain.hostname),
    records: [
      {
        type: 'TXT',
        name: challengeName(domain.hostname),
        value: domain.token,
        purpose:
          'Proves you control the name. Keep it: it is checked again, and the domain stops ' +
          'being served when it is gone.',
      },
      {
        type: 'CNAME',
        name: domain.hostname,
        value: `${slug}.${config.appsDomain}`,
        purpose: 'Sends the visitors of the name to the project.',
      },
    ],
    verified_at: iso(domain.verifiedAt),
    last_checked_at: iso(domain.lastCheckedAt),
    next_check_at: domain.nextCheckAt.toISOString(),
    created_at: domain.createdAt.toISOString(),
    updated_at: domain.updatedAt.toISOString(),
  };
}
