/**
 * The contract suites, exported as `hoist/plugin-api/testing`: a plugin author runs the suite of
 * their port against their plugin, as Hoist runs it against its own (uvu suites; run the file with node).
 */
export { analyzerContract, assertDetection, inputOf, type AnalyzerUnderTest, type Tree } from './analyzer.js';
export { changeFeedContract, type ChangeFeedUnderTest } from './change-feed.js';
export { builderContract, detection, type BuildCase, type BuilderUnderTest } from './builder.js';
export { dnsResolverContract, type DnsResolverUnderTest, type FreshOptions } from './dns-resolver.js';
export { mailerContract, type MailerUnderTest } from './mailer.js';
export { queueContract, type QueueFixture } from './queue.js';
export { sandboxContract, type SandboxUnderTest } from './sandbox.js';
export { storageContract, type StorageUnderTest } from './storage.js';
export { webhookSenderContract, type SenderOptions, type WebhookSenderUnderTest } from './webhook-sender.js';
