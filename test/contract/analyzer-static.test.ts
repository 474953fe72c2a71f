import analyzerStatic from '../../plugins/analyzer-static/index.js';
import { analyzerContract, type AnalyzerUnderTest } from './analyzer.js';

analyzerContract('analyzer-static', async (): Promise<AnalyzerUnderTest> => ({
  analyzer: await analyzerStatic.create({}),
  claims: [
    { files: { 'index.html': '<h1>hi</h1>' } },
    { files: { 'make.sh': 'mkdir out' }, settings: { build_command: 'sh make.sh', output_directory: 'out' } },
  ],
  declines: [{ files: { 'README.md': '# no html' } }, { files: { 'index.html': '' }, settings: { runtime: 'node' } }],
}));
