// Reads a ustar archive by the format's rules, independently of the server's writer (server/core/tar.ts).
import { expect } from 'vitest';

export interface Member {
  name: string;
  mode: number;
  mtime: number;
  content: Buffer;
}

/** Reads a ustar archive by the format's rules (every header's checksum and magic checked, the two zero blocks at the end). */
export function untar(buf: Buffer): Member[] {
  expect(buf.length % 512).toBe(0);
  const field = (h: Buffer, at: number, len: number) =>
    h
      .subarray(at, at + len)
      .toString('latin1')
      .replace(/\0.*$/s, '');
  const members: Member[] = [];
  let at = 0;
  for (;;) {
    const h = buf.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    expect(parseInt(field(h, 148, 8).trim(), 8), 'checksum').toBe(sum);
    expect(h.subarray(257, 263).toString('latin1')).toBe('ustar\0');
    expect(field(h, 156, 1)).toBe('0');
    const size = parseInt(field(h, 124, 12), 8);
    members.push({
      name: field(h, 0, 100),
      mode: parseInt(field(h, 100, 8), 8),
      mtime: parseInt(field(h, 136, 12), 8),
      content: buf.subarray(at + 512, at + 512 + size),
    });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  expect(buf.subarray(at).length).toBe(1024);
  expect(buf.subarray(at).every((b) => b === 0)).toBe(true);
  return members;
}

export const byName = (members: Member[]) => Object.fromEntries(members.map((m) => [m.name, m.content.toString('utf8')]));
