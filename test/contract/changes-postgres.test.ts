import pg from 'pg';
import { PostgresChangeFeed } from '../../plugins/changes-postgres/postgres-change-feed.js';
import { freshPgDatabase } from '../helpers/kernel.js';
import { changeFeedContract } from './change-feed.js';

changeFeedContract('changes-postgres', async () => {
  const db = await freshPgDatabase();
  const warn = () => {};
  const feed = new PostgresChangeFeed({ url: db.url, retryMs: 100, warn });
  const peer = new PostgresChangeFeed({ url: db.url, retryMs: 100, warn });
  await feed.start();
  await peer.start();
  return {
    feed,
    peer,
    // Ends every other session on the database: the feed's listening connection among them.
    breakConnection: async () => {
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() ' +
          "and pid <> pg_backend_pid() and query ilike 'listen%'",
      );
      await admin.end();
    },
    cleanup: async () => {
      await feed.stop();
      await peer.stop();
      await db.drop();
    },
  };
});
