import { ANALYZERS, type Analyzer } from '../../core/ports/analyzer.js';
import type { PluginDefinition } from '../../core/plugin.js';
import { NodeAnalyzer } from './node-analyzer.js';

export default {
  id: 'analyzer-node',
  port: 'analyzer',
  name: 'node',
  token: ANALYZERS,
  create: () => new NodeAnalyzer(),
} satisfies PluginDefinition<Analyzer>;
