import { EntitySchema } from '@mikro-orm/core';

/** A fixed-window counter shared by every API process (login throttling). */
export class RateBucket {
  key!: string;
  windowStart!: Date;
  count: number = 0;
}

export const RateBucketSchema = new EntitySchema<RateBucket>({
  class: RateBucket,
  tableName: 'rate_buckets',
  properties: {
    key: { type: 'string', length: 400, primary: true },
    windowStart: { type: 'datetime' },
    count: { type: 'integer' },
  },
});
