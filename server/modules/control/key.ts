// The control key: `CONTROL_KEY` when set, else one the database's first start makes (kept only as its SHA-256 in
// ServerKey, like API keys) and prints once. Project keys never open the control plane, nor it the API.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { type Clock, instant } from '../../core/clock.ts';
import { hashKey } from '../../core/identity.ts';
import { type Database, startLock } from '../../db/index.ts';

const KEY_NAME = 'control-key-sha256';

/** The hash to check control requests against, and the secret when this start made it (to print); null when off. */
export async function controlKey(
  db: Database,
  clock: Clock,
  config: { enabled: boolean; key?: string },
): Promise<{ hash: string; minted: string | null } | null> {
  if (!config.enabled) return null;
  if (config.key) return { hash: hashKey(config.key), minted: null };
  return db.write(async (tx) => {
    await startLock(db, tx); // two processes starting at once on an empty database make one key
    const row = await tx.serverKey.findUnique({ where: { name: KEY_NAME } });
    if (row) return { hash: row.value, minted: null };
    const secret = `ctl_${randomBytes(24).toString('base64url')}`;
    await tx.serverKey.create({ data: { name: KEY_NAME, value: hashKey(secret), createdAt: instant(clock) } });
    return { hash: hashKey(secret), minted: secret };
  });
}

/** Whether `secret` is the control key (compared in constant time). */
export const isControlKey = (hash: string, secret: string) => timingSafeEqual(Buffer.from(hashKey(secret), 'hex'), Buffer.from(hash, 'hex'));
