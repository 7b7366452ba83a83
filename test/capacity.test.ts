// server/capacity.ts's one guarantee against overbooking: `reserveIfFree` checks and reserves as one step, so two
// servers (two connection pools on one database) placing the last free replica at once give exactly one success.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Database, openDatabase, type Tx } from '../server/db/index.ts';
import { fits, reserve, reserveIfFree } from '../server/modules/hardware/capacity.ts';
import { usingPostgres } from './support/database.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const L40S = '1x_nvidia_l40s_48gb_pcie'; // room for exactly one replica on a fresh platform

let t: TestPlatform;
let second: Database;
beforeAll(async () => {
  t = await startTestPlatform();
  second = await openDatabase(t.services.db.url, { migrate: false });
});
afterAll(async () => {
  await second?.close();
  await t?.close();
});

/** Resolves once `n` callers are waiting: every transaction has started and read before any of them reserves. */
function barrier(n: number): () => Promise<void> {
  let arrive!: () => void;
  const all = new Promise<void>((resolve) => (arrive = resolve));
  let waiting = 0;
  return () => {
    if (++waiting === n) arrive();
    return all;
  };
}

const input = (ownerId: string) => ({ projectId: t.caller.identity.projectId, hardwareId: L40S, replicas: 1, ownerKind: 'deployment' as const, ownerId });
const open = () => t.services.db.prisma.hardwareReservation.count({ where: { hardwareId: L40S, endedAt: null } });
const releaseAll = () => t.services.db.write((tx) => tx.hardwareReservation.updateMany({ where: { hardwareId: L40S, endedAt: null }, data: { endedAt: 0n } }));

/** Two transactions on two pools, both inside their transaction (having read the capacity) before either places. */
async function race(place: (tx: Tx, ownerId: string) => Promise<boolean>): Promise<boolean[]> {
  const ready = barrier(2);
  const attempt = (db: Database, ownerId: string) =>
    db.write(async (tx) => {
      await fits(tx, L40S, 1); // each transaction sees the slot free before the other one placed anything
      await ready();
      return place(tx, ownerId);
    });
  return Promise.all([attempt(t.services.db, 'racer-a'), attempt(second, 'racer-b')]);
}

describe('reserveIfFree', () => {
  test('reserves when the replicas fit and answers false (writing nothing) when they do not or the hardware is unknown', async () => {
    expect(await t.services.db.write((tx) => reserveIfFree(tx, t.clock, { ...input('solo'), replicas: 2 }))).toBe(false);
    expect(await t.services.db.write((tx) => reserveIfFree(tx, t.clock, { ...input('solo'), hardwareId: 'no-such-hardware' }))).toBe(false);
    expect(await open()).toBe(0);
    expect(await t.services.db.write((tx) => reserveIfFree(tx, t.clock, input('solo')))).toBe(true);
    expect(await t.services.db.write((tx) => reserveIfFree(tx, t.clock, input('solo-2')))).toBe(false);
    expect(await open()).toBe(1);
    await releaseAll();
  });

  test('two servers reserving the last slot at once: exactly one succeeds', async () => {
    expect(await open()).toBe(0);
    // SQLite admits one writer to the file at a time, so two write transactions cannot both be open (in one process
    // the second one's busy wait would even block the first): there the two servers' attempts come one after the other.
    const results = usingPostgres
      ? await race((tx, ownerId) => reserveIfFree(tx, t.clock, input(ownerId)))
      : [
          await t.services.db.write((tx) => reserveIfFree(tx, t.clock, input('racer-a'))),
          await second.write((tx) => reserveIfFree(tx, t.clock, input('racer-b'))),
        ];
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await open()).toBe(1);
    await releaseAll();
  });

  test.runIf(usingPostgres)('the race is real: checking with fits and then reserving, without the lock, overbooks', async () => {
    const results = await race(async (tx, ownerId) => {
      if (!(await fits(tx, L40S, 1))) return false;
      await reserve(tx, t.clock, input(ownerId));
      return true;
    });
    expect(results).toEqual([true, true]);
    expect(await open()).toBe(2);
    await releaseAll();
  });
});
