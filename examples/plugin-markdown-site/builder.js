// @ts-check
import { copyFile, mkdir, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, posix, relative, sep } from 'node:path';
import MarkdownIt from 'markdown-it';
import { StageError } from 'hoist/plugin-api';
import { FRAMEWORK, OUTPUT_DIR } from './analyzer.js';

/** @typedef {import('hoist/plugin-api').Builder} Builder */
/** @typedef {{ rel: string, abs: string, size: number }} TreeFile */

// The tree is the tenant's: its names, sizes and links are hostile until checked.
const MAX_FILES = 10_000;
const MAX_PAGE_BYTES = 2 * 1024 * 1024;
const MAX_TOTAL_BYTES = 512 * 1024 * 1024;

// Raw HTML in the Markdown is shown as text, not passed through.
const md = new MarkdownIt({ html: false, linkify: true });

/** @param {string} code @param {string} message */
const refuse = (code, message) => new StageError(code, message);

/** @param {string} text */
const escapeHtml = (text) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** @param {string} path @param {string} root */
const inside = (path, root) => path === root || path.startsWith(root + sep);

/**
 * Every file under `root` but the output directory, relative and `/`-separated. A link is followed
 * only to a file inside the tree; one that leaves it fails the build.
 * @param {string} root a real path
 * @param {AbortSignal} signal
 * @returns {Promise<TreeFile[]>}
 */
async function treeOf(root, signal) {
  /** @type {TreeFile[]} */
  const files = [];
  let total = 0;
  /** @param {string} dir */
  const walk = async (dir) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      signal.throwIfAborted();
      const abs = join(dir, entry.name);
      const rel = relative(root, abs).split(sep).join('/');
      if (rel === OUTPUT_DIR) continue;
      if (entry.isDirectory()) {
        await walk(abs);
        continue;
      }
      const real = entry.isSymbolicLink() ? await realpath(abs).catch(() => null) : abs;
      if (!real || !inside(real, root)) throw refuse('build_link_outside', `${rel} is a link that leaves the project`);
      const info = await stat(real);
      if (!info.isFile()) continue;
      total += info.size;
      files.push({ rel, abs: real, size: info.size });
      if (files.length > MAX_FILES) throw refuse('build_too_many_files', `More than ${MAX_FILES} files`);
      if (total > MAX_TOTAL_BYTES)
        throw refuse('build_too_large', `The files add up to more than ${MAX_TOTAL_BYTES / 2 ** 20} MiB`);
    }
  };
  await walk(root);
  return files;
}

/**
 * The HTML path of each Markdown page: `index.md`, or `README.md` where there is no `index.md`
 * beside it, becomes its folder's `index.html`; any other `x.md` becomes `x.html`.
 * @param {string[]} pages
 * @returns {Map<string, string>}
 */
function htmlPaths(pages) {
  const lower = new Set(pages.map((p) => p.toLowerCase()));
  /** @param {string} dir @param {string} name */
  const at = (dir, name) => (dir === '.' ? name : `${dir}/${name}`);
  return new Map(
    pages.map((page) => {
      const dir = posix.dirname(page);
      const base = posix.basename(page).toLowerCase();
      const index = base === 'index.md' || (base === 'readme.md' && !lower.has(at(dir, 'index.md').toLowerCase()));
      return [page, index ? at(dir, 'index.html') : page.replace(/\.md$/i, '.html')];
    }),
  );
}

/**
 * `href` of a link in page `from`, pointing at the HTML of a Markdown page when it pointed at the page.
 * @param {string} href
 * @param {string} from
 * @param {Map<string, string>} html
 */
function rewriteLink(href, from, html) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//') || href.startsWith('#')) return href;
  const [, path = '', rest = ''] = /^([^?#]*)(.*)$/s.exec(href) ?? [];
  let decoded;
  try {
    decoded = decodeURI(path);
  } catch {
    return href;
  }
  if (!/\.md$/i.test(decoded)) return href;
  const target = posix.normalize(decoded.startsWith('/') ? decoded.slice(1) : posix.join(posix.dirname(from), decoded));
  const page = html.get(target) ?? target.replace(/\.md$/i, '.html');
  return encodeURI(posix.relative(posix.dirname(from), page) || posix.basename(page)) + rest;
}

/**
 * A page as HTML: its title (the first heading, else the file name) and its body, links rewritten.
 * @param {string} source
 * @param {string} from
 * @param {Map<string, string>} html
 */
function render(source, from, html) {
  const tokens = md.parse(source, {});
  let title = '';
  /** @param {import('markdown-it').Token[]} list */
  const visit = (list) => {
    for (const [i, t] of list.entries()) {
      if (!title && t.type === 'heading_open') title = list[i + 1]?.content ?? '';
      if (t.type === 'link_open') t.attrSet('href', rewriteLink(String(t.attrGet('href') ?? ''), from, html));
      if (t.children) visit(t.children);
    }
  };
  visit(tokens);
  return {
    title: title || posix.basename(from, posix.extname(from)),
    body: md.renderer.render(tokens, md.options, {}),
  };
}

/** @param {string} title @param {string} body */
const page = (title, body) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{max-width:46rem;margin:2rem auto;padding:0 1rem;font:16px/1.6 system-ui,sans-serif}
pre{overflow:auto}
</style>
</head>
<body>
<main>
${body}</main>
</body>
</html>
`;

/** @type {Builder} */
export const markdownBuilder = {
  id: 'builder-markdown',
  supports: (detection) => detection.runtime === 'static' && detection.framework === FRAMEWORK,
  async build({ workspace, signal, log, progress }) {
    const root = await realpath(workspace);
    const out = join(root, OUTPUT_DIR);
    const files = await treeOf(root, signal);
    const pages = files.filter((f) => /\.md$/i.test(f.rel));
    const html = htmlPaths(pages.map((p) => p.rel));
    await rm(out, { recursive: true, force: true });
    /** @param {string} rel */
    const target = async (rel) => {
      await mkdir(dirname(join(out, rel)), { recursive: true });
      return join(out, rel);
    };
    // Everything else (images, styles) is served beside the pages, as the links in them expect.
    for (const f of files.filter((f) => !html.has(f.rel))) await copyFile(f.abs, await target(f.rel));
    for (const [i, p] of pages.entries()) {
      signal.throwIfAborted();
      if (p.size > MAX_PAGE_BYTES)
        throw refuse('build_page_too_large', `${p.rel} is larger than ${MAX_PAGE_BYTES / 2 ** 20} MiB`);
      const { title, body } = render(await readFile(p.abs, 'utf8'), p.rel, html);
      await writeFile(await target(/** @type {string} */ (html.get(p.rel))), page(title, body));
      progress((i + 1) / pages.length);
    }
    if (![...html.values()].includes('index.html')) {
      const items = pages.map((p) => `<li><a href="${encodeURI(html.get(p.rel) ?? '')}">${escapeHtml(p.rel)}</a></li>`);
      await writeFile(await target('index.html'), page('Pages', `<ul>\n${items.join('\n')}\n</ul>\n`));
    }
    log(`Rendered ${pages.length} Markdown page(s) to HTML with markdown-it.`);
    return { outputDir: out };
  },
};

/** @type {import('hoist/plugin-api').PluginDefinition<'builder', {}>} */
export default {
  apiVersion: 1,
  id: 'builder-markdown',
  port: 'builder',
  name: 'markdown',
  deps: {},
  create: () => markdownBuilder,
};
