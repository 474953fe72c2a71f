import { Client } from 'minio';
import type { HoistConfig } from '../../config/schema.js';
import type { PluginDefinition } from '../../core/plugin.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { LOGGER } from '../../core/tokens.js';
import type { Logger } from 'pino';
import { MinioStorage } from './minio-storage.js';

/** A minio client for `url` (http or https, optional port and no path). */
function clientFor(url: string, key: string, config: HoistConfig): Client {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${key} must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (!/^https?:$/.test(u.protocol) || (u.pathname !== '/' && u.pathname !== '')) throw new Error(`${key} must be an http(s) URL with no path, got ${JSON.stringify(url)}`);
  return new Client({
    endPoint: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port ? Number(u.port) : undefined,
    useSSL: u.protocol === 'https:',
    accessKey: config.s3AccessKey!,
    secretKey: config.s3SecretKey!,
    // A known region spares a GetBucketLocation call before every request and presigning.
    region: config.s3Region,
  });
}

export default {
  id: 'storage-minio',
  port: 'storage',
  name: 'minio',
  token: STORAGE,
  create({ config, get }) {
    const log = get<Logger>(LOGGER);
    for (const key of ['s3Endpoint', 's3AccessKey', 's3SecretKey'] as const) {
      if (!config[key]) throw new Error(`${key} (HOIST_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}) is required for storage=minio`);
    }
    const client = clientFor(config.s3Endpoint!, 's3Endpoint', config);
    const presigner = config.s3PublicEndpoint ? clientFor(config.s3PublicEndpoint, 's3PublicEndpoint', config) : client;
    return new MinioStorage({
      client,
      presigner,
      bucket: config.s3Bucket,
      region: config.s3Region,
      createBucket: config.s3CreateBucket,
      warn: (obj, msg) => log.warn(obj, msg),
    });
  },
} satisfies PluginDefinition<Storage>;
