// Uploading a dataset as clients do (multipart `POST /v1/files/upload`), for tests whose subject is what uses it.
import { expect } from 'vitest';
import type { Caller } from './platform.ts';

/** Rows as JSON Lines; a string is taken as the file's text. */
export const jsonl = (rows: unknown[] | string) => (typeof rows === 'string' ? rows : rows.map((r) => JSON.stringify(r)).join('\n'));

/** Uploads `rows` as `name` for `purpose`; answers the file's id (its validation runs on the runner, later). */
export async function uploadFile(caller: Caller, purpose: 'fine-tune' | 'eval' | 'batch-api', rows: unknown[] | string, name = 'd.jsonl'): Promise<string> {
  const res = await caller.http
    .post('/v1/files/upload')
    .field('purpose', purpose)
    .field('file_name', name)
    .attach('file', Buffer.from(jsonl(rows)), name);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
}

/** The 44-byte header of a 16 kHz mono 16-bit PCM WAV file whose samples take `dataBytes`. */
export function wavHeader(dataBytes: number): Buffer {
  const b = Buffer.alloc(44);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + dataBytes, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(16000, 24);
  b.writeUInt32LE(32000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(dataBytes, 40);
  return b;
}
/** A silent WAV file of exactly `bytes` bytes. */
export const silentWav = (bytes: number) => Buffer.concat([wavHeader(bytes - 44), Buffer.alloc(bytes - 44)]);

/** A supertest parser: the body as bytes, or an error envelope (JSON) as its object. */
export const binaryBody = (res: any, done: (err: Error | null, body: unknown) => void) => {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => {
    const bytes = Buffer.concat(chunks);
    done(null, /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(bytes.toString('utf8')) : bytes);
  });
};
