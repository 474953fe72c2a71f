import { MemoryChangeFeed } from '../../plugins/changes-memory/memory-change-feed.js';
import { changeFeedContract } from './change-feed.js';

changeFeedContract('changes-memory', async () => {
  const feed = new MemoryChangeFeed();
  return { feed, peer: feed, cleanup: async () => {} };
});
