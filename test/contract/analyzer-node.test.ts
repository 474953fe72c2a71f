import analyzerNode from '../../plugins/analyzer-node/index.js';
import { analyzerContract, type AnalyzerUnderTest } from './analyzer.js';

const pkg = (json: object) => JSON.stringify(json);

analyzerContract('analyzer-node', async (): Promise<AnalyzerUnderTest> => ({
  analyzer: await analyzerNode.create({}),
  claims: [
    { files: { 'package.json': pkg({ scripts: { start: 'node server.js' } }), 'server.js': '' } },
    {
      files: {
        'package.json': pkg({ scripts: { build: 'vite build' }, devDependencies: { vite: '^5.0.0' } }),
        'package-lock.json': '{}',
        'index.html': '',
      },
    },
  ],
  declines: [{ files: { 'index.html': '<h1>hi</h1>' } }],
}));
