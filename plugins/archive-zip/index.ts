import { definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import { ZipArchive } from './zip-archive.js';

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'archive-zip',
  port: 'archive',
  name: 'zip',
  deps: {},
  create: () => new ZipArchive(),
});
