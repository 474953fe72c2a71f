import type { EntityManager } from '@mikro-orm/core';
import { EnvironmentSnapshot } from '../entities/environment-snapshot.js';
import { EnvironmentVariable } from '../entities/environment-variable.js';
import { ProjectKey } from '../entities/project-key.js';

/** Deletes a project's environment variables, deployment snapshots and data key (the only key that opens them). */
export async function deleteEnvironmentOf(em: EntityManager, projectId: string): Promise<void> {
  await em.nativeDelete(EnvironmentVariable, { projectId });
  await em.nativeDelete(EnvironmentSnapshot, { projectId });
  await em.nativeDelete(ProjectKey, { projectId });
}
