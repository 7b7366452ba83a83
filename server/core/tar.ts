// A POSIX tar (ustar) writer: regular files only, names under 100 bytes. Small enough to own (no dependency in
// package.json writes tar), and it yields the archive block by block, its length known before the first byte.

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

function header(m: TarMember): Buffer {
  const name = Buffer.from(m.name, 'utf8');
  if (name.length >= 100) throw new Error(`tar member name too long: ${m.name}`);
  const h = Buffer.alloc(BLOCK);
  name.copy(h, 0);
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, m.content.length);
  octal(h, 136, 12, Math.floor(m.mtimeMs / 1000));
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
    yield header(m);
    if (m.content.length) yield m.content;
    if (padding(m.content.length)) yield Buffer.alloc(padding(m.content.length));
  }
  yield Buffer.alloc(2 * BLOCK);
}
