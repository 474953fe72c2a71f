export * from './hoist-client.js';
export * from './errors.js';
export * from './operation-stream.js';
export * from './poll.js';
export * from './retry-policy.js';
export { sendWithRetries, type RetryOptions } from './retrying-fetch.js';
export type { paths, components } from './schema.js';
