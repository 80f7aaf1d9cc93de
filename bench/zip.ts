import { inflateRawSync } from 'node:zlib';

export interface ZipEntry {
  name: string;
  compressedSize: number;
  size: number;
  data(): Buffer;
}

/** The entries of a zip archive, read from its central directory (what `osls package` writes). */
export function readZip(archive: Buffer): ZipEntry[] {
  const end = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error('not a zip archive');
  const count = archive.readUInt16LE(end + 10);
  let offset = archive.readUInt32LE(end + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    const method = archive.readUInt16LE(offset + 10);
    const compressedSize = archive.readUInt32LE(offset + 20);
    const size = archive.readUInt32LE(offset + 24);
    const nameLength = archive.readUInt16LE(offset + 28);
    const extraLength = archive.readUInt16LE(offset + 30);
    const commentLength = archive.readUInt16LE(offset + 32);
    const localHeader = archive.readUInt32LE(offset + 42);
    const name = archive.toString('utf8', offset + 46, offset + 46 + nameLength);
    entries.push({
      name,
      compressedSize,
      size,
      data: () => {
        const start =
          localHeader + 30 + archive.readUInt16LE(localHeader + 26) + archive.readUInt16LE(localHeader + 28);
        const raw = archive.subarray(start, start + compressedSize);
        return method === 0 ? Buffer.from(raw) : inflateRawSync(raw);
      },
    });
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}
