import { loadConfig } from '../../config/load.js';
import builderStatic from '../../plugins/builder-static/index.js';
import sandboxNone from '../../plugins/sandbox-none/index.js';
import { builderContract, detection, type BuilderUnderTest } from './builder.js';

builderContract('builder-static', async (): Promise<BuilderUnderTest> => {
  const config = loadConfig({}, { dataDir: '/tmp/hoist-unused' });
  // A plain static site runs nothing, so no sandbox is asked for anything.
  const sandbox = await sandboxNone.create({ log: { warn: () => {} } as never });
  return {
    builder: await builderStatic.create({ config, sandbox }),
    builds: [
      {
        files: { 'index.html': '<h1>hi</h1>', 'a/b.css': '' },
        detection: detection(),
        outputs: ['index.html', 'a/b.css'],
      },
      {
        files: { 'site/index.html': '', 'notes.txt': '' },
        detection: detection({ outputDir: 'site' }),
        outputs: ['index.html'],
      },
    ],
    refuses: [detection({ runtime: 'node', startCommand: 'node server.js', packageManager: 'npm' })],
  };
});
