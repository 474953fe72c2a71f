import type { EntityManager } from '@mikro-orm/core';
import type { Clock } from '../../ports/clock.js';

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
}
