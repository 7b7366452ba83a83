// Hardware capacity and per-minute billing, shared by everything that runs replicas. A running replica holds a
// HardwareReservation; availability is capacity minus the GPUs of open reservations; cost is the minutes each
// reservation was held times the hardware's price when it started.
import { type Clock, instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';

export async function gpusInUse(db: Db | Tx): Promise<Map<string, number>> {
  const open = await db.hardwareReservation.groupBy({ by: ['hardwareId'], where: { endedAt: null }, _sum: { gpus: true } });
  return new Map(open.map((r) => [r.hardwareId, r._sum.gpus ?? 0]));
}

type ReserveInput = { projectId: string; hardwareId: string; replicas: number; ownerKind: 'v1_endpoint' | 'deployment'; ownerId: string };

/**
 * Starts `replicas` replicas of `owner` on `hardwareId` if they fit, checking and reserving as one step; answers
 * whether it did. Every request and runner path places replicas through here. It first takes the hardware row's
 * write lock until the transaction ends (a no-op update: the same row lock as SELECT ... FOR UPDATE on PostgreSQL,
 * in one statement both databases accept), so two servers placing replicas on one configuration at once (PostgreSQL,
 * READ COMMITTED) count each other's reservations instead of both reading the same free GPUs; on SQLite `write()`
 * already serializes writers. Locks are taken in the caller's order; callers trying several configurations try them
 * in one fixed order (price, id), so two of them cannot deadlock.
 */
export async function reserveIfFree(tx: Tx, clock: Clock, input: ReserveInput): Promise<boolean> {
  const { count } = await tx.hardware.updateMany({ where: { id: input.hardwareId }, data: { capacityGpus: { increment: 0 } } });
  if (count === 0 || !(await fits(tx, input.hardwareId, input.replicas))) return false;
  await reserve(tx, clock, input);
  return true;
}

/**
 * Starts `replicas` replicas of `owner` on `hardwareId` without checking capacity: only for the seed and for tests
 * that set up a state. Everything else calls `reserveIfFree`.
 */
export async function reserve(tx: Tx, clock: Clock, input: ReserveInput): Promise<void> {
  const hardware = await tx.hardware.findUniqueOrThrow({ where: { id: input.hardwareId } });
  for (let i = 0; i < input.replicas; i++) {
    await tx.hardwareReservation.create({
      data: {
        id: newId('rsv', clock.now()),
        projectId: input.projectId,
        hardwareId: input.hardwareId,
        gpus: hardware.gpuCount,
        ownerKind: input.ownerKind,
        ownerId: input.ownerId,
        startedAt: instant(clock),
        centsPerMinute: hardware.centsPerMinute,
      },
    });
  }
}

/** Stops every running replica of `owner` (or only `count` of them). */
export async function release(tx: Tx, clock: Clock, ownerKind: string, ownerId: string, count?: number): Promise<void> {
  const open = await tx.hardwareReservation.findMany({ where: { ownerKind, ownerId, endedAt: null }, orderBy: { id: 'desc' }, take: count });
  if (open.length) await tx.hardwareReservation.updateMany({ where: { id: { in: open.map((r) => r.id) } }, data: { endedAt: instant(clock) } });
}

/** Billing of one owner so far: minutes of replica time and cents, running replicas counted up to now. */
export async function usage(db: Db | Tx, clock: Clock, ownerKind: string, ownerId: string): Promise<{ replicaMinutes: number; cents: number }> {
  const rows = await db.hardwareReservation.findMany({ where: { ownerKind, ownerId } });
  let replicaMinutes = 0;
  let cents = 0;
  for (const r of rows) {
    const minutes = (Number(r.endedAt ?? BigInt(clock.now())) - Number(r.startedAt)) / 60_000;
    replicaMinutes += minutes;
    cents += minutes * r.centsPerMinute;
  }
  return { replicaMinutes, cents: Math.round(cents * 100) / 100 };
}

/** The one region all of this server's hardware is in: every configuration's capacity is one pool there. */
export const REGION = 'local';

/** How many more replicas of a configuration fit now: its free GPUs over the GPUs one replica holds. */
export const headroomOf = (h: { capacityGpus: number; gpuCount: number }, inUse: number) => Math.max(0, Math.floor((h.capacityGpus - inUse) / h.gpuCount));

export type AvailabilityStatus = 'available' | 'insufficient' | 'unavailable';

/** Whether one more replica fits (`available`), some GPUs are free but too few for one (`insufficient`), or none are. */
export function availabilityOf(h: { capacityGpus: number; gpuCount: number }, inUse: number): AvailabilityStatus {
  const free = h.capacityGpus - inUse;
  if (free >= h.gpuCount) return 'available';
  return free > 0 ? 'insufficient' : 'unavailable';
}

/** A configuration can run a model when its total GPU memory covers what the model needs; null: not deployable. */
export function canRun(h: { gpuMemory: number; gpuCount: number }, model: { minGpuMemory: number | null }): boolean {
  return model.minGpuMemory !== null && h.gpuMemory * h.gpuCount >= model.minGpuMemory;
}

/** Whether `replicas` more replicas fit on `hardwareId` now: an answer only; to place replicas call `reserveIfFree`. */
export async function fits(db: Db | Tx, hardwareId: string, replicas: number): Promise<boolean> {
  const hardware = await db.hardware.findUnique({ where: { id: hardwareId } });
  if (!hardware) return false;
  // Only this configuration's open reservations, not the whole platform's.
  const { _sum } = await db.hardwareReservation.aggregate({ where: { hardwareId, endedAt: null }, _sum: { gpus: true } });
  const inUse = _sum.gpus ?? 0;
  return hardware.capacityGpus - inUse >= replicas * hardware.gpuCount;
}
