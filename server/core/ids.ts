// Resource ids: a prefix naming the kind, then 26 characters that sort by creation time (ULID-like) so that
// listings and cursors can order by id.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export function newId(prefix: string, nowMs = Date.now()): string {
  let time = '';
  for (let t = nowMs, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time;
  let rand = '';
  for (const byte of randomBytes(16)) rand += ALPHABET[byte % 32];
  return `${prefix}_${time}${rand}`;
}
