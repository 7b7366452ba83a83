// A job's submission, shared by submitQueueJob and by fixtures (the Control tag's applyFixtures, through the index):
// the row a submit makes (checked as the platform checks it), its insert with the built-in worker's work item, and
// a fixture's job moved on through the machine to the state it asks for.
import { randomUUID } from 'node:crypto';
import type { QueueJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { idTaken } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { type Timing, transition } from '../../runner/progress.ts';
import { enqueue } from '../../runner/runner.ts';
import type { FixtureSection } from '../types.ts';
import { finishJob, queueJobs, queueMachine, WORK_KIND } from './machine.ts';
import { builtInModel, chatRequestOf, queueOf } from './rules.ts';

export interface Submission {
  model: string;
  payload: Record<string, unknown>;
  priority?: number;
  info?: Record<string, unknown>;
}

/** The row a submission makes (pending), and whether a built-in worker runs its queue; refuses what it cannot run. */
export async function newJob(db: Db | Tx, clock: Clock, projectId: string, body: Submission, id = newId('req', clock.now())) {
  const { model, warnings } = queueOf(body.model);
  const builtIn = await builtInModel(db, projectId, model);
  if (builtIn) chatRequestOf(model, body.payload);
  const now = instant(clock);
  const data = {
    id,
    projectId,
    model,
    status: queueMachine.states[0] as string,
    priority: body.priority ?? 0,
    inputs: JSON.stringify(body.payload),
    info: JSON.stringify(body.info ?? {}),
    warnings: JSON.stringify(warnings),
    createdAt: now,
    updatedAt: now,
  };
  return { data, builtIn: builtIn !== null };
}

export async function insertJob(tx: Tx, clock: Clock, data: Awaited<ReturnType<typeof newJob>>['data'], builtIn: boolean): Promise<QueueJob> {
  const job = await tx.queueJob.create({ data });
  if (builtIn && data.status === 'pending')
    await enqueue(tx, clock, { kind: WORK_KIND, subjectId: data.id, projectId: data.projectId, payload: { model: data.model } });
  return job;
}

export interface SeededJob extends Submission {
  id?: string;
  status?: 'pending' | 'done' | 'failed' | 'canceled';
  outputs?: Record<string, unknown>;
  error?: { message: string; code: string };
}

/**
 * A fixture's job: submitted, then moved by the machine to `status`: `canceled` by a cancel; `done` and `failed`
 * as a worker's claim that completes or fails it (inserted claimed, then finished through the claim).
 */
export async function seedJob(tx: Tx, timing: Timing, projectId: string, input: SeededJob): Promise<QueueJob> {
  const { data, builtIn } = await newJob(tx, timing.clock, projectId, input, input.id);
  const status = input.status ?? 'pending';
  if (status === 'pending') return insertJob(tx, timing.clock, data, builtIn);
  if (status === 'canceled') return transition(tx, timing, queueJobs, await insertJob(tx, timing.clock, data, builtIn), 'cancel');
  const token = randomUUID();
  const claimed = await insertJob(tx, timing.clock, { ...data, status: 'running', claimToken: token, claimedAt: data.createdAt } as typeof data, false);
  const finish =
    status === 'done'
      ? { event: 'complete' as const, outputs: input.outputs ?? {} }
      : { event: 'fail' as const, error: input.error ?? { message: 'The worker failed the job.', code: 'worker_failed' } };
  return finishJob(tx, timing, claimed, token, finish);
}

/** A fixtures document's queue jobs (the Control tag's applyFixtures). */
export const queueJobsSection: FixtureSection<'queue_jobs'> = {
  order: 1,
  async fill({ tx, services, project }, job) {
    if (job.request_id && (await tx.queueJob.findUnique({ where: { id: job.request_id } }))) throw idTaken('queue job', job.request_id, 'request_id');
    const seeded = await seedJob(tx, services, project.id, { ...job, id: job.request_id });
    return { ids: { queue_jobs: [seeded.id] } };
  },
};
