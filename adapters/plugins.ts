import type { EntitySchema } from '@mikro-orm/core';
import { entities } from '../core/entities/index.js';
import type { PluginDefinition } from '../core/plugin.js';
import analyzerNode from '../plugins/analyzer-node/index.js';
import analyzerStatic from '../plugins/analyzer-static/index.js';
import archiveZip from '../plugins/archive-zip/index.js';
import builderNode from '../plugins/builder-node/index.js';
import builderStatic from '../plugins/builder-static/index.js';
import changesMemory from '../plugins/changes-memory/index.js';
import changesPostgres from '../plugins/changes-postgres/index.js';
import cipherAesGcm from '../plugins/cipher-aes-gcm/index.js';
import deployerDocker from '../plugins/deployer-docker/index.js';
import deployerLocal from '../plugins/deployer-local/index.js';
import deployerPulumi from '../plugins/deployer-pulumi/index.js';
import hasherArgon2 from '../plugins/hasher-argon2/index.js';
import mailerOutbox from '../plugins/mailer-outbox/index.js';
import mailerSmtp from '../plugins/mailer-smtp/index.js';
import resolverSystem from '../plugins/resolver-system/index.js';
import sandboxBwrap from '../plugins/sandbox-bwrap/index.js';
import sandboxDocker from '../plugins/sandbox-docker/index.js';
import sandboxNone from '../plugins/sandbox-none/index.js';
import queueLocal from '../plugins/queue-local/index.js';
import queueNats from '../plugins/queue-nats/index.js';
import storageLocal from '../plugins/storage-local/index.js';
import storageMinio from '../plugins/storage-minio/index.js';
import tokensJose from '../plugins/tokens-jose/index.js';
import webhooksHttp from '../plugins/webhooks-http/index.js';

/** Every plugin shipped with Hoist; the kernel picks from these by configuration. */
export const plugins: PluginDefinition[] = [
  mailerOutbox,
  mailerSmtp,
  hasherArgon2,
  tokensJose,
  cipherAesGcm,
  queueLocal,
  queueNats,
  storageLocal,
  storageMinio,
  archiveZip,
  sandboxBwrap,
  sandboxDocker,
  sandboxNone,
  deployerLocal,
  deployerDocker,
  deployerPulumi,
  analyzerNode,
  analyzerStatic,
  builderNode,
  builderStatic,
  resolverSystem,
  changesMemory,
  changesPostgres,
  webhooksHttp,
];

/** Core's entity schemas and those of `plugins`: what the database opens with. */
export const entitiesOf = (list: PluginDefinition[]): EntitySchema[] => [
  ...entities,
  ...list.flatMap((p) => p.entities ?? []),
];
