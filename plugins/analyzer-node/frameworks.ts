import type { AnalyzerInput, FRAMEWORKS } from '../../core/ports/analyzer.js';
import type { PackageJson } from './package-json.js';

/** What a framework implies: how it runs, where it writes, its default build and start commands. */
export interface FrameworkTraits {
  name: string;
  runtime: 'static' | 'node';
  /** Where a static build writes its files (null for a server). */
  outputDir: string | null;
  /** The framework's own build command, run when package.json has no build script. */
  build: string | null;
  /** The framework's own start command for a server, used when package.json has no start script. */
  start: string | null;
  reason: string;
}

/** What a rule may look at; `exec` wraps a package binary command for the package manager. */
interface RuleContext {
  pkg: PackageJson;
  input: AnalyzerInput;
  exec: (command: string) => string;
}

interface Rule {
  name: (typeof FRAMEWORKS)[number];
  /** Any of these in dependencies or devDependencies selects the rule. */
  deps: string[];
  traits(ctx: RuleContext): Promise<Omit<FrameworkTraits, 'name' | 'reason'> & { why?: string }>;
}

const staticSite =
  (outputDir: string, build: string) =>
  async ({ exec }: RuleContext) => ({ runtime: 'static' as const, outputDir, build: exec(build), start: null });
const server =
  (build: string | null, start: string | null) =>
  async ({ exec }: RuleContext) => ({ runtime: 'node' as const, outputDir: null, build: build && exec(build), start });

/** `output: 'export'` in a next.config file. */
async function nextExports(input: AnalyzerInput): Promise<string | null> {
  for (const file of input.files.filter((f) => /^next\.config\.(js|mjs|cjs|ts|mts)$/.test(f))) {
    if (/output\s*:\s*['"`]export['"`]/.test((await input.readFile(file)) ?? '')) return file;
  }
  return null;
}

// More specific frameworks first: SvelteKit, Remix and Astro projects also depend on vite.
const RULES: Rule[] = [
  {
    name: 'nextjs',
    deps: ['next'],
    async traits({ input, exec }) {
      const config = await nextExports(input);
      return config
        ? {
            runtime: 'static',
            outputDir: 'out',
            build: exec('next build'),
            start: null,
            why: `${config} sets output: 'export'`,
          }
        : {
            runtime: 'node',
            outputDir: null,
            build: exec('next build'),
            start: exec('next start'),
            why: `no output: 'export' in next.config, so Next.js runs as a server`,
          };
    },
  },
  {
    name: 'astro',
    deps: ['astro'],
    async traits(ctx) {
      if (ctx.pkg.deps.has('@astrojs/node'))
        return {
          ...(await server('astro build', 'node ./dist/server/entry.mjs')(ctx)),
          why: 'the @astrojs/node adapter makes it a server',
        };
      return {
        ...(await staticSite('dist', 'astro build')(ctx)),
        why: 'no server adapter, so Astro builds static files',
      };
    },
  },
  { name: 'gatsby', deps: ['gatsby'], traits: staticSite('public', 'gatsby build') },
  { name: 'docusaurus', deps: ['@docusaurus/core'], traits: staticSite('build', 'docusaurus build') },
  { name: 'create-react-app', deps: ['react-scripts'], traits: staticSite('build', 'react-scripts build') },
  { name: 'eleventy', deps: ['@11ty/eleventy'], traits: staticSite('_site', 'eleventy') },
  { name: 'nuxt', deps: ['nuxt'], traits: server('nuxt build', 'node .output/server/index.mjs') },
  {
    name: 'sveltekit',
    deps: ['@sveltejs/kit'],
    async traits(ctx) {
      if (ctx.pkg.deps.has('@sveltejs/adapter-static'))
        return {
          ...(await staticSite('build', 'vite build')(ctx)),
          why: '@sveltejs/adapter-static builds static files',
        };
      const node = ctx.pkg.deps.has('@sveltejs/adapter-node');
      return {
        ...(await server('vite build', node ? 'node build' : null)(ctx)),
        why: node ? '@sveltejs/adapter-node makes it a server' : 'no adapter-static, so SvelteKit runs as a server',
      };
    },
  },
  { name: 'remix', deps: ['@remix-run/dev', '@remix-run/node'], traits: server(null, null) },
  { name: 'vite', deps: ['vite'], traits: staticSite('dist', 'vite build') },
  { name: 'nestjs', deps: ['@nestjs/core'], traits: server(null, null) },
  { name: 'express', deps: ['express'], traits: server(null, null) },
  { name: 'fastify', deps: ['fastify'], traits: server(null, null) },
  { name: 'koa', deps: ['koa'], traits: server(null, null) },
  { name: 'hono', deps: ['hono'], traits: server(null, null) },
];

/**
 * The framework of a package: the project setting `framework` when it names one Hoist knows,
 * else the first rule whose package is a dependency; null for a plain package.
 */
export async function detectFramework(ctx: RuleContext): Promise<FrameworkTraits | null> {
  const setting = ctx.input.settings.framework;
  const forced = setting ? RULES.find((r) => r.name === setting) : undefined;
  const rule = forced ?? RULES.find((r) => r.deps.some((d) => ctx.pkg.deps.has(d)));
  if (!rule) return null;
  const { why, ...traits } = await rule.traits(ctx);
  const dep = rule.deps.find((d) => ctx.pkg.deps.has(d));
  const found = forced ? 'project setting framework' : `${dep} is a dependency`;
  return { name: rule.name, ...traits, reason: why ? `${found}; ${why}` : found };
}
