import type { EntityManager } from '@mikro-orm/core';
import { Operation } from '../entities/operation.js';
import { Project } from '../entities/project.js';
import { invalid, notFound } from '../errors.js';
import { isUuid } from '../projects/keyset-cursor.js';
import { keysetPage, type PageOptions, type RecordPage } from '../projects/keyset-page.js';
import { token } from '../tokens.js';
import type { OperationView, OperationViews } from './operation-views.js';

export const OPERATION_LIST = token<OperationList>('hoist.OperationList');

/** The statuses an operation can have. */
export const OPERATION_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;
/** The kinds of operation. */
export const OPERATION_KINDS = ['deploy', 'promote', 'delete_project'] as const;

/** Which operations a list shows, and the page. */
export interface OperationFilter extends PageOptions {
  project_id?: string;
  status?: string;
  kind?: string;
}

/**
 * The account's operations, newest first (keyset on created_at, id), each as GET
 * /operations/{id} shows it. A project of another account (or none) is not_found, as on every
 * project route; an unknown status or kind is invalid_request naming the field.
 */
export class OperationList {
  constructor(
    private readonly em: EntityManager,
    private readonly views: Pick<OperationViews, 'view'>,
  ) {}

  /** One page of the account's operations matching `filter`. */
  async list(accountId: string, filter: OperationFilter): Promise<RecordPage<OperationView>> {
    const where: Record<string, unknown> = { accountId };
    if (filter.status !== undefined) {
      if (!(OPERATION_STATUSES as readonly string[]).includes(filter.status))
        throw invalid(`status must be one of ${OPERATION_STATUSES.join(', ')}`, { field: 'status' });
      where.status = filter.status;
    }
    if (filter.kind !== undefined) {
      if (!(OPERATION_KINDS as readonly string[]).includes(filter.kind))
        throw invalid(`kind must be one of ${OPERATION_KINDS.join(', ')}`, { field: 'kind' });
      where.kind = filter.kind;
    }
    if (filter.project_id !== undefined) {
      if (!isUuid(filter.project_id)) throw invalid('project_id must be a project id (UUID)', { field: 'project_id' });
      const owned = await this.em.count(Project, { id: filter.project_id, accountId });
      if (!owned) throw notFound('Project');
      where.projectId = filter.project_id;
    }
    return keysetPage(this.em, Operation, where, filter, (op) => this.views.view(op));
  }
}
