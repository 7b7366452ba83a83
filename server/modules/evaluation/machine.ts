// The evaluation job's state machine, and the runner's steps that move it. A job is accepted `pending`, queued, and
// started; a `running` job is evaluated outside any transaction (a long step: a worker that dies mid-job leaves it
// to another, which evaluates it again from the start) and its outcome committed together with its result file:
// `completed`, `user_error` when the input cannot be evaluated, or `error` when a server kept answering 429/503
// past its retries (engines/judge.ts). An evaluation that keeps failing is given up as `error`.
import type { EvaluationJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { invalidTransition } from '../../core/errors.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { enter, type Progression, type Timing } from '../../runner/progress.ts';
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

/** Moves a job by `event`, records the move in its status updates, and schedules the new state's timed step. */
export async function moveEvaluation(
  tx: Tx,
  timing: Timing,
  job: EvaluationJob,
  event: EvaluationEvent,
  message: string,
  data: Partial<EvaluationJob> = {},
): Promise<EvaluationJob> {
  const status = evaluationMachine.next(job.status, event);
  const now = instant(timing.clock);
  const updates: StatusUpdate[] = [...JSON.parse(job.statusUpdates), { status, message, at: Number(now) }];
  const { count } = await tx.evaluationJob.updateMany({
    where: { id: job.id, status: job.status },
    data: { ...data, status, statusUpdates: JSON.stringify(updates), updatedAt: now },
  });
  if (count === 0) throw invalidTransition(evaluationMachine.name, job.status, event);
  await enter(tx, timing, evaluationMachine, { id: job.id, projectId: job.projectId, state: status });
  return tx.evaluationJob.findUniqueOrThrow({ where: { id: job.id } });
}

export function evaluationProgression(services: Services): Progression<EvaluationState> {
  const step = (event: EvaluationEvent, message: string) => async (tx: Tx, id: string) => {
    await moveEvaluation(tx, services, await tx.evaluationJob.findUniqueOrThrow({ where: { id } }), event, message);
  };
  return {
    machine: evaluationMachine,
    load: async (db, id) => {
      const j = await db.evaluationJob.findUnique({ where: { id } });
      return j && { id: j.id, projectId: j.projectId, state: j.status };
    },
    steps: {
      pending: step('queue', 'The job is queued for evaluation.'),
      queued: step('start', 'The evaluation has started.'),
      running: {
        work: async (id): Promise<Evaluated> => evaluate(services, await services.db.prisma.evaluationJob.findUniqueOrThrow({ where: { id } })),
        async apply(tx, id, done: Evaluated) {
          const job = await tx.evaluationJob.findUniqueOrThrow({ where: { id } });
          if (done.outcome !== 'completed') {
            await moveEvaluation(tx, services, job, done.outcome === 'user_error' ? 'reject' : 'fail', done.message, {
              results: JSON.stringify({ error: done.message }),
            });
            return;
          }
          await recordResultFile(tx, services, job.projectId, done.resultFile);
          await moveEvaluation(tx, services, job, 'finish', done.summary, { results: JSON.stringify(done.results), resultFileId: done.resultFile.id });
        },
      },
    },
    giveUp: async (tx, id, error) => {
      const job = await tx.evaluationJob.findUniqueOrThrow({ where: { id } });
      const message = `The evaluation could not be completed: ${error.slice(0, 500)}`;
      await moveEvaluation(tx, services, job, 'fail', message, { results: JSON.stringify({ error: message }) });
    },
  };
}
