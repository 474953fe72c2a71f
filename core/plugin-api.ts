/**
 * The plugin API, exported as `hoist/plugin-api`: what a plugin written outside this repository may
 * use. PluginDefinition and definePlugin, the tokens, every port's types and token, and the errors.
 * The contract suites are `hoist/plugin-api/testing` (they load uvu, which a plugin at run time never needs).
 */
export * from './plugin.js';
export { HoistError, StageError, type ErrorCode } from './errors.js';
export * from './ports/analyzer.js';
export * from './ports/archive.js';
export * from './ports/builder.js';
export * from './ports/cipher.js';
export * from './ports/clock.js';
export * from './ports/deployer.js';
export * from './ports/dns-resolver.js';
export * from './ports/change-feed.js';
export * from './ports/mailer.js';
export * from './ports/password-hasher.js';
export * from './ports/queue.js';
export * from './ports/sandbox.js';
export * from './ports/storage.js';
export * from './ports/token-service.js';
export * from './ports/webhook-sender.js';
export * from './ports/workspaces.js';
