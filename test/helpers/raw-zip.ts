import { crc32, deflateRawSync } from 'node:zlib';

/** One entry for rawZip; every field a well-behaved writer would compute can be overridden to lie. */
export interface RawEntry {
  /** The stored name: a string is written as UTF-8, a Buffer byte for byte (to lie about the encoding). */
  name: string | Buffer;
  data?: Buffer | string;
  /** 0 stored (default), 8 deflated (data is compressed here), anything else written as given. */
  method?: number;
  /** The stored bytes as given, whatever `method` says (data then only sets the declared size and CRC). */
  stored?: Buffer;
  /** External file attributes; default a regular 0644 file (unix mode in the high 16 bits). */
  attrs?: number;
  /** General purpose bit flag; default 0x800 (UTF-8 name). Bit 0 marks the entry encrypted. */
  flags?: number;
  /** Declared uncompressed size, in both headers. */
  size?: number;
  /** Declared compressed size, in both headers. */
  compressedSize?: number;
  crc?: number;
  /** Writes no local header and points the central record at this offset (overlapping entries). */
  localAt?: number;
}

/** External attributes of a unix entry with this mode (e.g. 0o120777 for a symbolic link). */
export const unixAttrs = (mode: number) => (mode << 16) >>> 0;

/** Builds a ZIP byte for byte (local headers, central directory, end record) from entries that may lie. */
export function rawZip(entries: RawEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.isBuffer(e.name) ? e.name : Buffer.from(e.name);
    const raw = Buffer.from(e.data ?? '');
    const method = e.method ?? 0;
    const data = e.stored ?? (method === 8 ? deflateRawSync(raw) : raw);
    const flags = e.flags ?? 0x800;
    const crc = e.crc ?? crc32(raw);
    const size = e.size ?? raw.length;
    const compressedSize = e.compressedSize ?? data.length;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressedSize, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(0x031e, 4); // made by unix, zip 3.0
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(compressedSize, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(e.attrs ?? unixAttrs(0o100644), 38);
    central.writeUInt32LE(e.localAt ?? offset, 42);
    centrals.push(central, name);
    if (e.localAt === undefined) {
      locals.push(local, name, data);
      offset += local.length + name.length + data.length;
    }
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
