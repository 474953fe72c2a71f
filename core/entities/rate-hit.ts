import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** One accepted hit of a sliding-window rate limit (core/auth/rate-limiter.ts), shared by every process. */
export class RateHit {
  id: string = randomUUID();
  /** What is limited, e.g. `login:address:<ip>`; secrets in it are hashed. */
  key!: string;
  at!: Date;
}

export const RateHitSchema = new EntitySchema<RateHit>({
  class: RateHit,
  tableName: 'rate_hits',
  indexes: [{ properties: ['key', 'at'] }, { properties: ['at'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    key: { type: 'string', length: 400 },
    at: { type: 'Date' },
  },
});
