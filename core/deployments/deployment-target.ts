import type { Operation } from '../entities/operation.js';
import type { Version } from '../entities/version.js';
import type { DeploymentTarget } from '../environment/variable-rules.js';
import type { OperationState } from '../operations/state-machine.js';

/**
 * What operation `operation` deploys `version` as: a preview when the version was uploaded as one, unless the
 * operation deploys to production whatever its version was (a deploy hook building the live version again, which may
 * be a promoted preview's).
 */
export function deploymentTarget(
  version: Pick<Version, 'options'>,
  operation: Pick<Operation, 'state'>,
): DeploymentTarget {
  const production = (operation.state as unknown as Pick<OperationState, 'production'> | null)?.production;
  return version.options.target === 'preview' && !production ? 'preview' : 'production';
}
