import type { EntityManager } from '@mikro-orm/core';
import type { Clock } from '../../ports/clock.js';
import { queryRows } from '../../entities/plain-sql.js';

/**
 * What the ORM repositories share: bound to a transaction (`within`), they write in it (a stage's
 * success commit); otherwise each call works in a fork of its own.
 */
export abstract class OrmRepository {
  constructor(
    protected readonly em: EntityManager,
    protected readonly clock: Clock,
    private readonly tx?: EntityManager,
  ) {}

  /** Where a call reads and writes. */
  protected get db(): EntityManager {
    return this.tx ?? this.em.fork();
  }

  /**
   * The rows a plain query answers, in the transaction when bound to one: for the reads every deploy makes, where an
   * entity load cost several times the query (bench/orm-reads.ts).
   */
  protected rows<T>(sql: string, params: unknown[]): Promise<T[]> {
    return queryRows<T>(this.tx ?? this.em, sql, params);
  }
}
