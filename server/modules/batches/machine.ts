// The batch's state machine, and the runner's steps that move it: VALIDATING counts the file's requests, then
// IN_PROGRESS runs them a chunk per step (run.ts) until every line is answered or errored. Expiry is checked at each
// step; cancel is a caller's move. Every way out of IN_PROGRESS (and a failure after some lines) records the result
// files it has (files.ts).
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { type MoveOptions, type Progression, stored, transition } from '../../runner/progress.ts';
import { enqueue } from '../../runner/runner.ts';
import type { Services } from '../types.ts';
import { recordResults } from './files.ts';
import { applyChunk, type Chunk, runChunk } from './run.ts';
import { type Validated, validateInput } from './validate.ts';

export const batchMachine = defineMachine({
  name: 'batch',
  kind: 'batch_run',
  states: ['VALIDATING', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'EXPIRED', 'CANCELLED'],
  events: ['start', 'finish', 'fail', 'expire', 'cancel'],
  terminal: ['COMPLETED', 'FAILED', 'EXPIRED', 'CANCELLED'],
  transitions: {
    VALIDATING: { start: 'IN_PROGRESS', fail: 'FAILED', expire: 'EXPIRED', cancel: 'CANCELLED' },
    IN_PROGRESS: { finish: 'COMPLETED', fail: 'FAILED', expire: 'EXPIRED', cancel: 'CANCELLED' },
  },
  timed: {
    VALIDATING: { duration: 'batch_validate', defaultMs: 0 },
    IN_PROGRESS: { duration: 'batch_chunk', defaultMs: 0 },
  },
});

export type BatchState = (typeof batchMachine.states)[number];
export type BatchEvent = (typeof batchMachine.events)[number];

export const batches = stored<Batch>()({
  machine: batchMachine,
  table: (c) => c.batch,
  field: 'status',
  stamp: (_row, move, now) => ({ updatedAt: now, ...(batchMachine.isTerminal(move.to) && { completedAt: now }) }),
});

/** A move that ends the batch: its result files recorded with it, in the same transaction. */
export async function end(tx: Tx, services: Pick<Services, 'clock' | 'config'>, row: Batch, event: BatchEvent, options: MoveOptions<Batch> = {}) {
  const moved = await transition(tx, services, batches, row, event, options);
  return recordResults(tx, services, moved);
}

const expiryMessage = (row: Batch) =>
  `The batch did not finish within its completion window (${row.completionWindow}): ${row.linesDone} of ${row.totalLines} requests were done; their results are in its files.`;

/**
 * Schedules the next chunk of an IN_PROGRESS batch: its payload names the committed line count it starts from, so
 * each chunk is one work item (a chunk scheduled twice would show as two items of one payload), and one held back
 * by the rate limits (`held`) is told from the chunk it repeats.
 */
async function nextChunk(tx: Tx, services: Pick<Services, 'clock'>, row: Batch, delayMs: number, held = false) {
  const payload = { state: row.status, epoch: 0, done: row.linesDone, ...(held && { held: services.clock.now() }) };
  await enqueue(tx, services.clock, { kind: batchMachine.kind, subjectId: row.id, projectId: row.projectId, payload, delayMs });
}

export function batchProgression(services: Services): Progression<BatchState> {
  const expired = (row: Batch) => BigInt(services.clock.now()) >= row.jobDeadline;
  return {
    stored: batches,
    steps: {
      VALIDATING: {
        work: async (_id, row: Batch): Promise<Validated | null> => (expired(row) ? null : validateInput(services, row)),
        async apply(tx, _id, done: Validated | null, row: Batch) {
          if (done === null || expired(row)) return void (await end(tx, services, row, 'expire', { data: { error: expiryMessage(row) } }));
          if ('error' in done) return void (await end(tx, services, row, 'fail', { data: { error: done.error } }));
          await transition(tx, services, batches, row, 'start', { data: { totalLines: done.lines, duplicates: JSON.stringify(done.duplicates) } });
        },
      },
      IN_PROGRESS: {
        work: async (_id, row: Batch): Promise<Chunk | null> => (expired(row) ? null : runChunk(services, row)),
        async apply(tx, _id, chunk: Chunk | null, row: Batch) {
          if (chunk === null || expired(row)) return void (await end(tx, services, row, 'expire', { data: { error: expiryMessage(row) } }));
          if (chunk.retryInMs !== undefined) return void (await nextChunk(tx, services, row, chunk.retryInMs, true));
          const after = await applyChunk(tx, services, row, chunk);
          if (!after) return;
          if (after.linesDone >= after.totalLines) return void (await end(tx, services, after, 'finish'));
          await nextChunk(tx, services, after, batchMachine.delayMs('IN_PROGRESS', services.config) ?? 0);
        },
      },
    },
    failure: {
      events: ['fail'],
      fail: (tx, row: Batch, event, error) => end(tx, services, row, event as BatchEvent, { data: { error: error.message } }),
    },
    giveUp: async (tx, id, error) => {
      const row = await tx.batch.findUniqueOrThrow({ where: { id } });
      await end(tx, services, row, 'fail', { data: { error: `The batch could not be run: ${error.slice(0, 500)}` } });
    },
  };
}
