import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** A customer-owned subdomain of a project; see core/domains/domain-states.ts for its states. */
export class Domain {
  id: string = randomUUID();
  accountId!: string;
  projectId!: string;
  /** Lowercased, no trailing dot; once per project, while other projects may claim it too. */
  hostname!: string;
  /**
   * The hostname while this domain holds it (verified, active, misconfigured), else null: unique,
   * so one project at a time holds a name, however many claim it.
   */
  ownedHostname: string | null = null;
  /** `pending`, `verified`, `active`, `misconfigured` or `failed`. */
  status: string = 'pending';
  /** The value the `_hoist-challenge.<hostname>` TXT record must hold. */
  token!: string;
  /** What the last check found wrong, for people; null when nothing is. */
  message: string | null = null;
  /** Checks in a row that did not find the domain active (the backoff grows with it). */
  failures: number = 0;
  verifiedAt: Date | null = null;
  /** First time the domain went active; from then on a failed check makes it misconfigured. */
  activatedAt: Date | null = null;
  lastCheckedAt: Date | null = null;
  nextCheckAt!: Date;
  /** A checker holds the domain until then (set by conditional update, so one checker at a time). */
  claimedUntil: Date | null = null;
  /** Random id of the claim's holder: its result is written only while it still holds the claim. */
  claimedBy: string | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const DomainSchema = new EntitySchema<Domain>({
  class: Domain,
  tableName: 'domains',
  indexes: [{ properties: ['hostname'] }, { properties: ['accountId'] }, { properties: ['nextCheckAt'] }],
  uniques: [{ properties: ['projectId', 'hostname'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    accountId: { type: 'uuid' },
    projectId: { type: 'uuid' },
    hostname: { type: 'string', length: 253 },
    ownedHostname: { type: 'string', length: 253, nullable: true, unique: true },
    status: { type: 'string', length: 16 },
    token: { type: 'string', length: 64 },
    message: { type: 'text', nullable: true },
    failures: { type: 'integer' },
    verifiedAt: { type: 'Date', nullable: true },
    activatedAt: { type: 'Date', nullable: true },
    lastCheckedAt: { type: 'Date', nullable: true },
    nextCheckAt: { type: 'Date' },
    claimedUntil: { type: 'Date', nullable: true },
    claimedBy: { type: 'uuid', nullable: true },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
  },
});
