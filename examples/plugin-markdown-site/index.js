// @ts-check
// A Hoist plugin package: the default export is a list of two plugin definitions, an analyzer that
// claims a folder of Markdown files without index.html, and the builder that renders it.
import analyzer from './analyzer.js';
import builder from './builder.js';

export default [analyzer, builder];
