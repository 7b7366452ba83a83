// The queue job's state machine (the requirements' table), and the moves every worker makes through it: claim
// (one statement, safe with several processes), heartbeat, complete, fail, and the claim timeouts the runner's
// sweep applies. Every move after a claim is fenced by the claim's token: a worker whose claim timed out (the job
// went back to the queue, maybe to another worker) can no longer touch the job.
import { randomUUID } from 'node:crypto';
import type { QueueJob } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Clock } from '../../core/clock.ts';
import type { Config } from '../../core/config.ts';
import { conflict } from '../../core/errors.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Database, Tx } from '../../db/index.ts';
import { type Progression, stored, type Timing, transition, transitionIfStill } from '../../runner/progress.ts';
import { enqueue, workItemRow } from '../../runner/runner.ts';

export const queueMachine = defineMachine({
  name: 'queue job',
  kind: 'queue_claim_timeout',
  states: ['pending', 'running', 'done', 'failed', 'canceled'],
  events: ['claim', 'cancel', 'complete', 'fail', 'claim_timeout', 'retries_exhausted'],
  terminal: ['done', 'failed', 'canceled'],
  transitions: {
    pending: { claim: 'running', cancel: 'canceled' },
    running: { complete: 'done', fail: 'failed', claim_timeout: 'pending', retries_exhausted: 'failed' },
  },
  timed: { running: { duration: 'queue_claim_timeout', defaultMs: 60_000 } },
});

/**
 * Every move stamps the update time, and the done time on entering a terminal state. A claim moves jobs into
 * `running` in one set-based statement (claimJobs) that schedules the claim's own timeout check: no single-row
 * transition enters `running`, so the machine's timed step there is always the claim's.
 */
export const queueJobs = stored<QueueJob>()({
  machine: queueMachine,
  table: (c) => c.queueJob,
  field: 'status',
  stamp: (_j, move, now) => ({ updatedAt: now, ...(queueMachine.isTerminal(move.to) ? { doneAt: now } : {}) }),
});

/** The control plane's hold on queue jobs (control/time.ts): no timed steps of its own; a failure writes `info.error`, as a worker's does. */
export const steerQueueJobs = (timing: Timing): Progression<(typeof queueMachine.states)[number]> => ({
  stored: queueJobs,
  steps: {},
  failure: {
    events: ['fail', 'retries_exhausted'],
    fail: (tx, job: QueueJob, event, error) =>
      transition(tx, timing, queueJobs, job, event as (typeof queueMachine.events)[number], {
        data: { info: JSON.stringify({ ...json(job.info), error }), claimUntil: null },
      }),
  },
});

/** Claim timeouts a job survives; the next one fails it for good. */
export const MAX_RETRIES = 3;
/** The runner's work kinds: the built-in worker's, and the claim timeout's check (the machine's timed step). */
export const WORK_KIND = 'queue_work';
export const SWEEP_KIND = queueMachine.kind;

export const claimTimeoutMs = (config: Pick<Config, 'durations'>) => queueMachine.delayMs('running', config)!;

export interface ClaimOptions {
  projectId: string;
  model: string;
  limit: number;
  timeoutMs: number;
  workerId: string;
}

/**
 * Claims up to `limit` pending jobs of a queue, highest priority then oldest first, and schedules the claim's timeout
 * check with them; answers them as claimed. On PostgreSQL that is one statement (no transaction round trips): the
 * rows are picked and locked once, in a CTE (an IN subquery may be planned as a join that picks again), updated, and
 * the check's work item inserted from what was updated. On SQLite, the same in one serialized write transaction.
 */
export async function claimJobs(db: Database, clock: Clock, o: ClaimOptions): Promise<QueueJob[]> {
  const now = clock.now();
  const token = randomUUID();
  const pg = db.provider === 'postgresql';
  const args: unknown[] = [];
  const p = (value: unknown) => {
    args.push(value);
    return pg ? `$${args.length}` : '?';
  };
  const set = `"status" = ${p(queueMachine.next('pending', 'claim'))}, "claimToken" = ${p(token)}, "workerId" = ${p(o.workerId)}, "claimTimeoutMs" = ${p(o.timeoutMs)},
    "claimUntil" = ${p(now + o.timeoutMs)}, "claimedAt" = ${p(now)}, "updatedAt" = ${p(now)}`;
  const pick = `SELECT "id" FROM "QueueJob" WHERE "projectId" = ${p(o.projectId)} AND "model" = ${p(o.model)} AND "status" = 'pending'
    ORDER BY "priority" DESC, "createdAt", "id" LIMIT ${p(o.limit)}`;
  const order = (a: QueueJob, b: QueueJob) => b.priority - a.priority || Number(a.createdAt - b.createdAt) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  if (pg) {
    const check = workItemRow(clock, { kind: SWEEP_KIND, projectId: o.projectId, delayMs: o.timeoutMs });
    const sql = `WITH picked AS (${pick} FOR UPDATE SKIP LOCKED),
      claimed AS (UPDATE "QueueJob" q SET ${set} FROM picked WHERE q."id" = picked."id" RETURNING q.*),
      scheduled AS (INSERT INTO "WorkItem" ("id", "kind", "subjectId", "projectId", "payload", "state", "runAt", "createdAt", "updatedAt")
        SELECT ${p(check.id)}, ${p(check.kind)}, min("id"), ${p(check.projectId)},
          json_build_object('ids', json_agg("id"), 'token', ${p(token)}::text)::text, ${p(check.state)}, ${p(check.runAt)}, ${p(check.createdAt)}, ${p(check.updatedAt)}
        FROM claimed HAVING count(*) > 0)
      SELECT * FROM claimed`;
    return (await db.writeStatement((c) => c.$queryRawUnsafe<QueueJob[]>(sql, ...args))).sort(order);
  }
  return db.write(async (tx) => {
    const ids = (await tx.$queryRawUnsafe<{ id: string }[]>(`UPDATE "QueueJob" SET ${set} WHERE "id" IN (${pick}) RETURNING "id"`, ...args)).map((r) => r.id);
    if (ids.length === 0) return [];
    await scheduleClaimCheck(tx, clock, o.projectId, { ids, token }, o.timeoutMs);
    return (await tx.queueJob.findMany({ where: { id: { in: ids } } })).sort(order);
  });
}

export const claimLost = (id: string) =>
  conflict(
    `The claim on queue job '${id}' no longer holds: it timed out (the job went back to the queue) or the job has finished.`,
    'claim_lost',
    'claim_token',
  );

const json = (s: string | null) => (s ? JSON.parse(s) : {});

export type Finish = { event: 'complete'; outputs: Record<string, unknown> } | { event: 'fail'; error: { message: string; code: string } };

/**
 * Completes or fails the job `token` holds. A retry of the same move by the same claim answers the job again;
 * anything else without the claim is `claim_lost`.
 */
export async function finishJob(tx: Tx, timing: Timing, job: QueueJob, token: string, finish: Finish): Promise<QueueJob> {
  if (job.claimToken !== token) throw claimLost(job.id);
  const target = finish.event === 'complete' ? 'done' : 'failed';
  if (job.status === target) return job;
  if (job.status !== 'running') throw claimLost(job.id);
  return transition(tx, timing, queueJobs, job, finish.event, {
    where: { claimToken: token },
    data: { ...finishData(job, finish), claimUntil: null },
    refused: () => claimLost(job.id),
  });
}

const finishData = (job: Pick<QueueJob, 'info'>, finish: Finish) =>
  finish.event === 'complete' ? { outputs: JSON.stringify(finish.outputs) } : { info: JSON.stringify({ ...json(job.info), error: finish.error }) };

/** Completes the job if `token` still holds it, in one statement; answers the job done, or nothing if it did not hold. */
export async function completeHeld(
  db: Database,
  timing: Timing,
  held: { projectId: string; requestId: string; model: string; token: string },
  finish: Extract<Finish, { event: 'complete' }>,
): Promise<QueueJob | null> {
  // The row as the claim left it: the move's compare-and-set checks it, so nothing is read first.
  const claimed = { id: held.requestId, projectId: held.projectId, status: 'running' } as QueueJob;
  return db.writeStatement((c) =>
    transitionIfStill(c, timing, queueJobs, claimed, finish.event, {
      where: { projectId: held.projectId, model: held.model, claimToken: held.token },
      data: { ...finishData(claimed, finish), claimUntil: null },
    }),
  );
}

/**
 * Completes or fails a job its claimer holds, in one statement, from the row as the claim answered it (no read
 * first: the move's compare-and-set on the token checks that the claim still holds, and only the holder changes
 * the row meanwhile); answers the finished job, or null if the claim no longer held.
 */
export function finishHeld(db: Database, timing: Timing, claimed: QueueJob, token: string, finish: Finish): Promise<QueueJob | null> {
  return db.writeStatement((c) =>
    transitionIfStill(c, timing, queueJobs, claimed, finish.event, {
      where: { claimToken: token },
      data: { ...finishData(claimed, finish), claimUntil: null },
    }),
  );
}

/** A status update: the claim's timeout starts again, and `info` keys are merged in. */
export async function heartbeatJob(tx: Tx, clock: Clock, job: QueueJob, token: string, info?: Record<string, unknown>): Promise<QueueJob> {
  if (job.claimToken !== token || job.status !== 'running') throw claimLost(job.id);
  const now = clock.now();
  const { count } = await tx.queueJob.updateMany({
    where: { id: job.id, status: 'running', claimToken: token },
    data: {
      claimUntil: BigInt(now + (job.claimTimeoutMs ?? 0)),
      updatedAt: BigInt(now),
      ...(info && Object.keys(info).length > 0 && { info: JSON.stringify({ ...json(job.info), ...info }) }),
    },
  });
  if (count === 0) throw claimLost(job.id);
  return tx.queueJob.findUniqueOrThrow({ where: { id: job.id } });
}

/** A claim's timed step: due when the claim's timeout runs out; each heartbeat pushes the timeout further. */
export interface ClaimCheck {
  ids: string[];
  token: string;
}

/** Schedules the check of a claim's timeout, in the claiming transaction. */
export async function scheduleClaimCheck(tx: Tx, clock: Clock, projectId: string, check: ClaimCheck, timeoutMs: number): Promise<void> {
  await enqueue(tx, clock, { kind: SWEEP_KIND, subjectId: check.ids[0]!, projectId, payload: check, delayMs: timeoutMs });
}

/** The claim's jobs still held by it: those whose timeout has run out, and how long until the next one's does. */
export async function heldByClaim(db: Database, clock: Clock, check: ClaimCheck): Promise<{ expired: QueueJob[]; nextInMs?: number }> {
  const now = clock.now();
  const held = await db.prisma.queueJob.findMany({ where: { id: { in: check.ids }, status: 'running', claimToken: check.token } });
  const expired = held.filter((j) => Number(j.claimUntil) <= now);
  const alive = held.filter((j) => Number(j.claimUntil) > now).map((j) => Number(j.claimUntil) - now);
  return { expired, nextInMs: alive.length ? Math.min(...alive) : undefined };
}

/**
 * Applies run-out claim timeouts: back to `pending` with `retries` + 1 (and the retry in `info.retry_history`) while
 * retries < 3, else `failed` for good. A job returned to a queue with a built-in worker schedules that worker again.
 */
export async function expireClaims(
  tx: Tx,
  timing: Timing,
  jobs: QueueJob[],
  hasBuiltIn: (tx: Tx, projectId: string, model: string) => Promise<boolean>,
): Promise<number> {
  const now = timing.clock.now();
  let moved = 0;
  for (const job of jobs) {
    const event = job.retries < MAX_RETRIES ? 'claim_timeout' : 'retries_exhausted';
    const info = json(job.info);
    const data =
      event === 'claim_timeout'
        ? {
            retries: job.retries + 1,
            workerId: null,
            info: JSON.stringify({
              ...info,
              retry_history: [
                ...(Array.isArray(info.retry_history) ? info.retry_history : []),
                { retry: job.retries + 1, at: new Date(now).toISOString(), worker_id: job.workerId, reason: 'claim_timeout' },
              ],
            }),
          }
        : {
            info: JSON.stringify({
              ...info,
              error: { message: `No status update within the claim timeout, after ${MAX_RETRIES} retries: failed permanently.`, code: 'retries_exhausted' },
            }),
          };
    // Fenced by the claim: a heartbeat or a completion that got in first wins.
    const next = await transitionIfStill(tx, timing, queueJobs, job, event, {
      where: { claimToken: job.claimToken, claimUntil: { lte: BigInt(now) } },
      data: { ...data, claimToken: null, claimUntil: null },
    });
    if (!next) continue;
    moved++;
    if (next.status === 'pending' && (await hasBuiltIn(tx, job.projectId, job.model))) {
      await enqueue(tx, timing.clock, { kind: WORK_KIND, subjectId: job.id, projectId: job.projectId, payload: { model: job.model } });
    }
  }
  return moved;
}
