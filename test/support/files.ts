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
