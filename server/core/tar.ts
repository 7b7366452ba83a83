// A POSIX tar (ustar) writer: regular files only, names under 100 bytes. Small enough to own (no dependency in
// package.json writes tar), and it yields the archive block by block, its length known before the first byte, or
// writes it to a file a member at a time (TarFileWriter) when the members' lengths are known only once written.
import { type FileHandle, open } from 'node:fs/promises';

export interface TarMember {
  name: string;
  content: Buffer;
  /** Modification time, milliseconds since the epoch. */
  mtimeMs: number;
}

const BLOCK = 512;

/** `value` as `width - 1` octal digits and a NUL, the ustar form of a number field. */
function octal(header: Buffer, offset: number, width: number, value: number): void {
  header.write(`${value.toString(8).padStart(width - 1, '0')}\0`, offset, width, 'ascii');
}

function header(memberName: string, size: number, mtimeMs: number): Buffer {
  const name = Buffer.from(memberName, 'utf8');
  if (name.length >= 100) throw new Error(`tar member name too long: ${memberName}`);
  const h = Buffer.alloc(BLOCK);
  name.copy(h, 0);
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, Math.floor(mtimeMs / 1000));
  h.write('        ', 148, 8, 'ascii'); // the checksum is computed with its own field as spaces
  h.write('0', 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return h;
}

const padding = (n: number) => (BLOCK - (n % BLOCK)) % BLOCK;

/** The archive's size in bytes: a header and the padded content per member, then two zero blocks. */
export const tarLength = (members: TarMember[]) => members.reduce((n, m) => n + BLOCK + m.content.length + padding(m.content.length), 0) + 2 * BLOCK;

/** The archive, a member at a time (header, content, padding), then the end-of-archive blocks. */
export function* tar(members: TarMember[]): Generator<Buffer> {
  for (const m of members) {
    yield header(m.name, m.content.length, m.mtimeMs);
    if (m.content.length) yield m.content;
    if (padding(m.content.length)) yield Buffer.alloc(padding(m.content.length));
  }
  yield Buffer.alloc(2 * BLOCK);
}

/**
 * Writes an archive to a file a member at a time, each member's content streamed in (its length need not be known
 * first): a member's header is written once its content is, at the place left for it. Memory holds one chunk.
 */
export class TarFileWriter {
  private at = 0;
  private member?: { name: string; mtimeMs: number; start: number; length: number };
  private constructor(private readonly fd: FileHandle) {}

  static async create(path: string): Promise<TarFileWriter> {
    return new TarFileWriter(await open(path, 'w'));
  }

  begin(name: string, mtimeMs: number): void {
    this.member = { name, mtimeMs, start: this.at, length: 0 };
    this.at += BLOCK;
  }

  async write(chunk: Buffer): Promise<void> {
    await this.fd.write(chunk, 0, chunk.length, this.at);
    this.at += chunk.length;
    this.member!.length += chunk.length;
  }

  async end(): Promise<void> {
    const m = this.member!;
    const h = header(m.name, m.length, m.mtimeMs);
    await this.fd.write(h, 0, BLOCK, m.start);
    const pad = padding(m.length);
    if (pad) await this.fd.write(Buffer.alloc(pad), 0, pad, this.at);
    this.at += pad;
    this.member = undefined;
  }

  /** Ends the archive and closes the file; answers its size. */
  async close(): Promise<number> {
    await this.fd.write(Buffer.alloc(2 * BLOCK), 0, 2 * BLOCK, this.at);
    this.at += 2 * BLOCK;
    await this.fd.close();
    return this.at;
  }

  /** Closes the file after a failure (the caller removes it). */
  async abort(): Promise<void> {
    await this.fd.close().catch(() => {});
  }
}
