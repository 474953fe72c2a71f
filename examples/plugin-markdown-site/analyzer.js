// @ts-check
/** @typedef {import('hoist/plugin-api').Analyzer} Analyzer */
/** @typedef {import('hoist/plugin-api').Detection} Detection */

/** Where the builder writes the site, inside the build workspace. */
export const OUTPUT_DIR = '.hoist-markdown-site';
/** The framework name this plugin's analyzer and builder agree on. */
export const FRAMEWORK = 'markdown';

/** @type {Analyzer} */
export const markdownAnalyzer = {
  id: 'analyzer-markdown',
  // Ahead of analyzer-static (0), which refuses a tree without index.html; behind analyzer-node (10).
  priority: 5,
  async detect({ files, settings }) {
    if (settings.runtime && settings.runtime !== 'static') return null;
    if (settings.build_command || settings.skip_build) return null;
    if (files.includes('index.html') || files.includes('package.json')) return null;
    const pages = files.filter((f) => /\.md$/i.test(f));
    if (pages.length === 0) return null;
    return {
      runtime: 'static',
      framework: FRAMEWORK,
      outputDir: OUTPUT_DIR,
      installCommand: null,
      buildCommand: null,
      startCommand: null,
      packageManager: null,
      nodeVersion: null,
      reasons: {
        runtime: `${pages.length} Markdown file(s) and no index.html`,
        output_dir: 'the pages rendered to HTML by builder-markdown',
      },
      warnings: [],
    };
  },
};

/** @type {import('hoist/plugin-api').PluginDefinition<'analyzer', {}>} */
export default {
  apiVersion: 1,
  id: 'analyzer-markdown',
  port: 'analyzer',
  name: 'markdown',
  deps: {},
  create: () => markdownAnalyzer,
};
