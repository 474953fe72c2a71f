import type { HoistConfig } from '../../config/schema.js';
import type { Kernel } from '../../adapters/kernel.js';
import { dropStream, natsUrl, uniqueStream } from './nats.js';
import { removeDockerProjects } from './docker.js';

/**
 * The production backends a test run asks for through the environment, as `hoist` itself reads
 * them: HOIST_QUEUE=nats, HOIST_STORAGE=minio (HOIST_S3_ENDPOINT, HOIST_S3_ACCESS_KEY and
 * HOIST_S3_SECRET_KEY; scripts/test.js starts an S3 server and sets them when absent) and
 * HOIST_DEPLOYER=docker. Each kernel gets a stream and a bucket of its own, so test files running
 * side by side never share jobs or objects; `cleanup` removes them, and the containers of its
 * projects, once the kernel is stopped.
 */
export function backendsFromEnv(env = process.env) {
  const overrides: Partial<HoistConfig> = {};
  const stream = env.HOIST_QUEUE === 'nats' ? uniqueStream() : null;
  if (stream) Object.assign(overrides, { queue: 'nats', natsUrl: env.HOIST_NATS_URL ?? natsUrl, natsStream: stream });
  if (env.HOIST_STORAGE === 'minio') {
    if (!env.HOIST_S3_ENDPOINT)
      throw new Error('HOIST_STORAGE=minio needs HOIST_S3_ENDPOINT (npm test starts an S3 server and sets it)');
    Object.assign(overrides, {
      storage: 'minio',
      s3Endpoint: env.HOIST_S3_ENDPOINT,
      s3AccessKey: env.HOIST_S3_ACCESS_KEY,
      s3SecretKey: env.HOIST_S3_SECRET_KEY,
      s3Bucket: `hoist-t${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
      s3CreateBucket: true,
    });
  }
  if (env.HOIST_DEPLOYER) overrides.deployer = env.HOIST_DEPLOYER;
  return {
    overrides,
    /** Ids of the kernel's projects, read before it stops (its database goes with it). */
    async projectsOf(kernel: Kernel): Promise<string[]> {
      if (overrides.deployer !== 'docker') return [];
      const rows: { id: string }[] = await kernel.orm.em.fork().getConnection().execute('select id from projects');
      return rows.map((r) => r.id);
    },
    async cleanup(projects: string[]) {
      if (stream) await dropStream(String(overrides.natsUrl), stream);
      if (projects.length) await removeDockerProjects(projects);
    },
  };
}
