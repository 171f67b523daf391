import { inflateRawSync } from 'node:zlib';
import { ConversionError } from './types.ts';

export interface ZipBudget {
  /** Sum of the uncompressed sizes of all entries. */
  bytes: number;
  entries: number;
}

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

/**
 * Checks a zip container (.docx and friends) before a library unpacks it in
 * memory: the declared uncompressed sizes in the central directory must fit
 * the budget, and since a declaration can lie, every entry is inflated here
 * with a hard output cap and must come out at its declared size. A zip bomb,
 * ZIP64, a truncated or corrupt archive: ConversionError, nothing allocated
 * past the budget.
 */
export function checkZip(bytes: Buffer, budget: ZipBudget): void {
  readZip(bytes, budget, () => false);
}

/**
 * checkZip, handing back the entries it inflated whose names `keep` takes
 * (the names as stored, without a leading '/'): a reader of an Office
 * package (xlsx.ts, pptx.ts) gets the parts the check already verified, and
 * never more than the budget in all.
 */
export function readZip(bytes: Buffer, budget: ZipBudget, keep: (name: string) => boolean): Map<string, Buffer> {
  const kept = new Map<string, Buffer>();
  const entries = centralDirectory(bytes, budget);
  let declared = 0;
  for (const entry of entries) {
    declared += entry.size;
    if (declared > budget.bytes) {
      throw new ConversionError(
        `zip entries uncompress to more than ${budget.bytes} bytes (zip bomb?); not unpacked`,
      );
    }
  }
  for (const entry of entries) {
    const data = entryData(bytes, entry);
    const name = entry.name.replace(/^\/+/, '');
    if (entry.method === 0) {
      if (data.length !== entry.size) throw new ConversionError(`zip entry ${entry.name} is corrupt`);
      if (keep(name)) kept.set(name, data);
      continue;
    }
    if (entry.method !== 8) throw new ConversionError(`zip entry ${entry.name} uses compression method ${entry.method}`);
    let inflated: Buffer;
    try {
      // maxOutputLength: a lying header cannot make this allocate more than it declared.
      inflated = inflateRawSync(data, { maxOutputLength: Math.max(1, entry.size) });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ERR_BUFFER_TOO_LARGE') {
        throw new ConversionError(`zip entry ${entry.name} uncompresses past its declared size (zip bomb?); not unpacked`);
      }
      throw new ConversionError(`zip entry ${entry.name} is corrupt: ${(error as Error).message}`);
    }
    if (inflated.length !== entry.size) throw new ConversionError(`zip entry ${entry.name} is corrupt (size mismatch)`);
    if (keep(name)) kept.set(name, inflated);
  }
  return kept;
}

function centralDirectory(bytes: Buffer, budget: ZipBudget): ZipEntry[] {
  const eocd = findEndOfCentralDirectory(bytes);
  if (eocd < 0) throw new ConversionError('not a zip archive, or truncated (no end of central directory)');
  const count = bytes.readUInt16LE(eocd + 10);
  const size = bytes.readUInt32LE(eocd + 12);
  const offset = bytes.readUInt32LE(eocd + 16);
  if (count === 0xffff || offset === 0xffffffff) throw new ConversionError('ZIP64 archives are not unpacked');
  if (count > budget.entries) throw new ConversionError(`zip has ${count} entries, over the limit of ${budget.entries}`);
  if (offset + size > eocd) throw new ConversionError('zip central directory is truncated or corrupt');
  const entries: ZipEntry[] = [];
  let at = offset;
  for (let i = 0; i < count; i++) {
    if (at + 46 > eocd || bytes.readUInt32LE(at) !== 0x02014b50) {
      throw new ConversionError('zip central directory is truncated or corrupt');
    }
    const nameLength = bytes.readUInt16LE(at + 28);
    const extraLength = bytes.readUInt16LE(at + 30);
    const commentLength = bytes.readUInt16LE(at + 32);
    const entry: ZipEntry = {
      method: bytes.readUInt16LE(at + 10),
      compressedSize: bytes.readUInt32LE(at + 20),
      size: bytes.readUInt32LE(at + 24),
      localOffset: bytes.readUInt32LE(at + 42),
      name: bytes.toString('utf8', at + 46, Math.min(eocd, at + 46 + nameLength)),
    };
    if (entry.size === 0xffffffff || entry.compressedSize === 0xffffffff || entry.localOffset === 0xffffffff) {
      throw new ConversionError('ZIP64 archives are not unpacked');
    }
    entries.push(entry);
    at += 46 + nameLength + extraLength + commentLength;
  }
  // Security: JSZip (mammoth's) reads directory records for as long as they follow one another, whatever the
  // count says, and of two entries of one name the last wins: a fourth record past a count of 3 held the
  // document.xml mammoth converted, never inflated here (a red-team finding).
  // (A directory may be larger than its records: APPNOTE's digital signature record is counted in its size.)
  if (at > offset + size || (at + 4 <= eocd && bytes.readUInt32LE(at) === 0x02014b50)) {
    throw new ConversionError('zip central directory holds more than its end record says');
  }
  const names = new Set(entries.map((e) => e.name.replace(/^\/+/, '')));
  if (names.size !== entries.length) throw new ConversionError('zip has two entries of one name');
  return entries;
}

function entryData(bytes: Buffer, entry: ZipEntry): Buffer {
  const at = entry.localOffset;
  if (at + 30 > bytes.length || bytes.readUInt32LE(at) !== 0x04034b50) {
    throw new ConversionError(`zip entry ${entry.name} is truncated or corrupt`);
  }
  const start = at + 30 + bytes.readUInt16LE(at + 26) + bytes.readUInt16LE(at + 28);
  const end = start + entry.compressedSize;
  if (end > bytes.length) throw new ConversionError(`zip entry ${entry.name} is truncated`);
  return bytes.subarray(start, end);
}

/** The end-of-central-directory record sits in the last 22 + 65,535 bytes (its comment). */
function findEndOfCentralDirectory(bytes: Buffer): number {
  const stop = Math.max(0, bytes.length - 22 - 0xffff);
  for (let at = bytes.length - 22; at >= stop; at--) {
    if (bytes.readUInt32LE(at) === 0x06054b50) return at;
  }
  return -1;
}
