import { CONFIG, definePlugin, LOGGER, PLUGIN_API_VERSION } from '../../core/plugin.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'changes-postgres',
  port: 'changes',
  name: 'postgres',
  deps: { config: CONFIG, log: LOGGER },
  async create({ config, log }) {
    if (!config.databaseUrl) throw new Error('changes=postgres needs databaseUrl (HOIST_DATABASE_URL)');
    // Loaded only when chosen, with the pg client: a start on the embedded defaults stays fast.
    const { PostgresChangeFeed } = await import('./postgres-change-feed.js');
    return new PostgresChangeFeed({ url: config.databaseUrl, warn: (obj, msg) => log.warn(obj, msg) });
  },
});
