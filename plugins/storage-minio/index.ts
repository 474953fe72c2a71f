import type { Client } from 'minio';
import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION, type HoistConfig } from '../../core/plugin.js';

/** A minio client for `url` (http or https, optional port and no path); the SDK loads only when chosen. */
async function clientFor(url: string, key: string, config: HoistConfig): Promise<Client> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${key} must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (!/^https?:$/.test(u.protocol) || (u.pathname !== '/' && u.pathname !== ''))
    throw new Error(`${key} must be an http(s) URL with no path, got ${JSON.stringify(url)}`);
  const { Client } = await import('minio');
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

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'storage-minio',
  port: 'storage',
  name: 'minio',
  deps: { config: CONFIG, log: LOGGER },
  async create({ config, log }) {
    for (const key of ['s3Endpoint', 's3AccessKey', 's3SecretKey'] as const) {
      if (!config[key])
        throw new Error(
          `${key} (HOIST_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}) is required for storage=minio`,
        );
    }
    const client = await clientFor(config.s3Endpoint!, 's3Endpoint', config);
    const presigner = config.s3PublicEndpoint
      ? await clientFor(config.s3PublicEndpoint, 's3PublicEndpoint', config)
      : client;
    const { MinioStorage } = await import('./minio-storage.js');
    return new MinioStorage({
      client,
      presigner,
      bucket: config.s3Bucket,
      region: config.s3Region,
      createBucket: config.s3CreateBucket,
      warn: (obj, msg) => log.warn(obj, msg),
    });
  },
});
