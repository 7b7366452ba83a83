// The evaluation job's state machine, and the runner's steps that move it. A job is accepted `pending`, queued, and
// started; a `running` job is evaluated outside any transaction (a long step: a worker that dies mid-job leaves it
// to another, which evaluates it again from the start) and its outcome committed together with its result file:
// `completed`, `user_error` when the input cannot be evaluated, or `error` when a server kept answering 429/503
// past its retries (engines/judge.ts). An evaluation that keeps failing is given up as `error`.
import type { EvaluationJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { type Progression, stored, transition } from '../../runner/progress.ts';
import type { Services } from '../types.ts';
import { recordResultFile } from './dataset.ts';
import { type Evaluated, evaluate } from './evaluate.ts';

export const evaluationMachine = defineMachine({
  name: 'evaluation',
  kind: 'evaluation_run',
  states: ['pending', 'queued', 'running', 'completed', 'user_error', 'error'],
  events: ['queue', 'start', 'finish', 'reject', 'fail'],
  terminal: ['completed', 'user_error', 'error'],
  transitions: {
    pending: { queue: 'queued' },
    queued: { start: 'running' },
    running: { finish: 'completed', reject: 'user_error', fail: 'error' },
  },
  timed: {
    pending: { duration: 'evaluation_queue', defaultMs: 0 },
    queued: { duration: 'evaluation_start', defaultMs: 0 },
    running: { duration: 'evaluation_run', defaultMs: 0 },
  },
});

export type EvaluationState = (typeof evaluationMachine.states)[number];
export type EvaluationEvent = (typeof evaluationMachine.events)[number];

export interface StatusUpdate {
  status: string;
  message: string;
  at: number;
}

/** Every move is recorded in the job's status updates, with the mover's message. */
export const evaluations = stored<EvaluationJob>()({
  machine: evaluationMachine,
  table: (c) => c.evaluationJob,
  field: 'status',
  stamp: (job, move, now, message = '') => ({
    statusUpdates: JSON.stringify([...JSON.parse(job.statusUpdates), { status: move.to, message, at: Number(now) } satisfies StatusUpdate]),
    updatedAt: now,
  }),
});

export function evaluationProgression(services: Services): Progression<EvaluationState> {
  const step = (event: EvaluationEvent, note: string) => async (tx: Tx, id: string) => {
    await transition(tx, services, evaluations, await tx.evaluationJob.findUniqueOrThrow({ where: { id } }), event, { note });
  };
  return {
    stored: evaluations,
    steps: {
      pending: step('queue', 'The job is queued for evaluation.'),
      queued: step('start', 'The evaluation has started.'),
      running: {
        work: async (id): Promise<Evaluated> => evaluate(services, await services.db.prisma.evaluationJob.findUniqueOrThrow({ where: { id } })),
        async apply(tx, id, done: Evaluated) {
          const job = await tx.evaluationJob.findUniqueOrThrow({ where: { id } });
          if (done.outcome !== 'completed') {
            await transition(tx, services, evaluations, job, done.outcome === 'user_error' ? 'reject' : 'fail', {
              note: done.message,
              data: { results: JSON.stringify({ error: done.message }) },
            });
            return;
          }
          await recordResultFile(tx, services, job.projectId, done.resultFile);
          await transition(tx, services, evaluations, job, 'finish', {
            note: done.summary,
            data: { results: JSON.stringify(done.results), resultFileId: done.resultFile.id },
          });
        },
      },
    },
    // Its table fails a job only from `running`: a fault rule cannot fail it at its first step.
    failure: {
      events: ['fail', 'reject'],
      fail: (tx, job, event, error) =>
        transition(tx, services, evaluations, job, event as EvaluationEvent, {
          note: error.message,
          data: { results: JSON.stringify({ error: error.message }) },
        }),
    },
    giveUp: async (tx, id, error) => {
      const job = await tx.evaluationJob.findUniqueOrThrow({ where: { id } });
      const message = `The evaluation could not be completed: ${error.slice(0, 500)}`;
      await transition(tx, services, evaluations, job, 'fail', { note: message, data: { results: JSON.stringify({ error: message }) } });
    },
  };
}
