import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';

/** One master key: 32 bytes for AES-256. */
export interface MasterKey {
  id: string;
  key: Buffer;
  createdAt: Date | null;
}

/** The master keys: the current one wraps new data keys, all of them unwrap. */
export interface KeyRing {
  current(): MasterKey;
  get(id: string): MasterKey | undefined;
  list(): MasterKey[];
  /** Adds a new key and makes it current; null when the keys come from configuration. */
  add(): MasterKey | null;
}

const ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** Decodes base64 or base64url key material; throws unless it is 32 bytes. */
function material(text: string, id: string): Buffer {
  const key = Buffer.from(text.trim(), text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
  if (key.length !== 32)
    throw new Error(`master key ${JSON.stringify(id)} must be 32 bytes (base64), got ${key.length}`);
  return key;
}

/**
 * Keys given as `HOIST_MASTER_KEY` (config `masterKey`): `id:base64` entries separated by commas,
 * the first one current, e.g. `k2:<32 bytes base64>,k1:<32 bytes base64>`.
 */
export function keysFromConfig(spec: string): KeyRing {
  const keys = spec.split(',').map((entry, i) => {
    const at = entry.indexOf(':');
    const id = entry.slice(0, at).trim();
    if (at < 1 || !ID.test(id))
      throw new Error(
        `masterKey (HOIST_MASTER_KEY) entry ${i + 1} must be id:base64 with an id of letters, digits, _ . -`,
      );
    return { id, key: material(entry.slice(at + 1), id), createdAt: null };
  });
  if (new Set(keys.map((k) => k.id)).size !== keys.length)
    throw new Error('masterKey (HOIST_MASTER_KEY) names one id twice');
  return { current: () => keys[0], get: (id) => keys.find((k) => k.id === id), list: () => keys, add: () => null };
}

interface KeyFile {
  version: 1;
  current: string;
  keys: { id: string; key: string; created_at: string }[];
}

const newKey = (): MasterKey => ({
  id: `mk-${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(4).toString('hex')}`,
  key: randomBytes(32),
  createdAt: new Date(),
});

/**
 * Keys kept in a JSON file (mode 0600). The file is read again whenever it changes, so a process
 * sees a key `hoist keys rotate` added in another one. `create` makes the file with one key when it
 * does not exist (another process creating it first wins).
 */
export class FileKeyRing implements KeyRing {
  private keys: MasterKey[] = [];
  private currentId = '';
  private seen = '';

  constructor(
    private readonly path: string,
    create: boolean,
    onCreate: () => void,
  ) {
    if (!existsSync(path)) {
      if (!create) throw new Error(`master key file ${path} (masterKeyFile) does not exist`);
      mkdirSync(dirname(path), { recursive: true });
      // Written aside, then linked in place: a process starting at the same time sees no file or a whole one.
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, serialize([newKey()], null), { mode: 0o600 });
      try {
        linkSync(tmp, path);
        onCreate();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      } finally {
        unlinkSync(tmp);
      }
    }
    chmodSync(path, 0o600);
    this.load();
  }

  current(): MasterKey {
    this.load();
    return this.keys.find((k) => k.id === this.currentId)!;
  }

  get(id: string): MasterKey | undefined {
    this.load();
    return this.keys.find((k) => k.id === id);
  }

  list(): MasterKey[] {
    this.load();
    return [...this.keys];
  }

  add(): MasterKey {
    this.load();
    const key = newKey();
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, serialize([...this.keys, key], key.id), { mode: 0o600 });
    renameSync(tmp, this.path);
    this.load();
    return key;
  }

  private load(): void {
    const s = statSync(this.path);
    const stamp = `${s.ino}:${s.size}:${s.mtimeMs}`;
    if (stamp === this.seen) return;
    let file: KeyFile;
    try {
      file = JSON.parse(readFileSync(this.path, 'utf8')) as KeyFile;
    } catch (err) {
      throw new Error(`master key file ${this.path} is not valid JSON: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (!Array.isArray(file.keys) || !file.keys.length) throw new Error(`master key file ${this.path} holds no keys`);
    const keys = file.keys.map((k) => {
      if (!ID.test(String(k.id))) throw new Error(`master key file ${this.path}: bad key id ${JSON.stringify(k.id)}`);
      return { id: k.id, key: material(String(k.key), k.id), createdAt: k.created_at ? new Date(k.created_at) : null };
    });
    if (!keys.some((k) => k.id === file.current))
      throw new Error(`master key file ${this.path}: current key ${JSON.stringify(file.current)} is not in the file`);
    this.keys = keys;
    this.currentId = file.current;
    this.seen = stamp;
  }
}

function serialize(keys: MasterKey[], current: string | null): string {
  const file: KeyFile = {
    version: 1,
    current: current ?? keys[keys.length - 1].id,
    keys: keys.map((k) => ({
      id: k.id,
      key: k.key.toString('base64'),
      created_at: (k.createdAt ?? new Date(0)).toISOString(),
    })),
  };
  return `${JSON.stringify(file, null, 2)}\n`;
}
