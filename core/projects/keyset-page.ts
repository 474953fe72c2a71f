import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/core';
import { invalid } from '../errors.js';
import { decodeCursor, encodeCursor } from './keyset-cursor.js';
import { PAGE_DEFAULT, PAGE_MAX } from './project-service.js';

/** Where a page starts (`cursor`: a `nextCursor` of the previous page) and how long it is. */
export interface PageOptions {
  cursor?: string;
  limit?: number;
}

/** One page of records, newest first; `nextCursor` is null on the last page. */
export interface RecordPage<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * A keyset page of `entity` rows matching `where`, ordered by (createdAt, id) descending: a bad
 * `limit` (1 to PAGE_MAX) or `cursor` throws invalid_request naming the field.
 */
export async function keysetPage<T extends { id: string; createdAt: Date }, V>(
  em: EntityManager,
  entity: EntityName<T>,
  where: object,
  opts: PageOptions,
  view: (row: T) => V | Promise<V>,
): Promise<RecordPage<V>> {
  const limit = opts.limit ?? PAGE_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_MAX)
    throw invalid(`limit must be 1 to ${PAGE_MAX}`, { field: 'limit' });
  const after = opts.cursor === undefined ? null : decodeCursor(opts.cursor);
  const rows = await em.find(
    entity,
    {
      ...where,
      ...(after && {
        $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }],
      }),
    } as FilterQuery<T>,
    { orderBy: { createdAt: 'desc', id: 'desc' } as never, limit: limit + 1 },
  );
  const items = rows.slice(0, limit);
  return {
    items: await Promise.all(items.map(view)),
    nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1]) : null,
  };
}
