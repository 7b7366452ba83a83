// The platform clock's offset (core/clock.ts OffsetClock), kept beside the server's keys so that it survives a
// restart and a reset: the clock never runs back, and a process started later takes the offset up. Only the control
// plane moves it; every start reads it, the control plane on or off.
import type { OffsetClock } from '../core/clock.ts';
import type { Database, Tx } from './index.ts';

const OFFSET_KEY = 'clock-offset-ms';

/** The offset an earlier advance left (0 when none did). */
export async function storedOffset(db: Database): Promise<number> {
  const row = await db.prisma.serverKey.findUnique({ where: { name: OFFSET_KEY } });
  return row ? Number(row.value) : 0;
}

/** Moves a starting process's clock to the offset an earlier advance left. */
export async function restoreClock(db: Database, clock: OffsetClock): Promise<void> {
  clock.advance((await storedOffset(db)) - clock.offsetMs);
}

/** Keeps the largest offset any process reached (in the caller's transaction). */
export async function keepOffset(tx: Tx, offsetMs: number, createdAt: bigint): Promise<void> {
  const row = await tx.serverKey.findUnique({ where: { name: OFFSET_KEY } });
  const value = String(Math.max(offsetMs, Number(row?.value ?? 0)));
  await tx.serverKey.upsert({ where: { name: OFFSET_KEY }, create: { name: OFFSET_KEY, value, createdAt }, update: { value } });
}
