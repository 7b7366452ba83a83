// The upload job's state machine, and the runner's steps that move it: Queued -> Running -> Complete | Failed.
// Failed straight from Queued happens only when the runner gives up on a step that keeps failing.
import type { ModelUploadJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant, iso } from '../../core/clock.ts';
import { invalidTransition } from '../../core/errors.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { enter, type Progression, type Timing } from '../../runner/progress.ts';
import { parseSource, resolves, SOURCE_LABEL } from './sources.ts';

export const uploadJobMachine = defineMachine({
  name: 'upload job',
  kind: 'model_upload',
  states: ['Queued', 'Running', 'Complete', 'Failed'],
  events: ['start', 'complete', 'fail'],
  terminal: ['Complete', 'Failed'],
  transitions: {
    Queued: { start: 'Running', fail: 'Failed' },
    Running: { complete: 'Complete', fail: 'Failed' },
  },
  timed: {
    Queued: { duration: 'model_upload_queue', defaultMs: 2_000 },
    Running: { duration: 'model_upload', defaultMs: 10_000 },
  },
});

export type UploadEvent = (typeof uploadJobMachine.events)[number];

/**
 * Moves a job by `event` inside `tx`, appending a status update, and schedules the new state's timed step. Complete
 * makes its model ready; Failed deletes its pending model (the name is free again; the job keeps what was asked).
 */
export async function moveJob(tx: Tx, timing: Timing, job: ModelUploadJob, event: UploadEvent, message: string): Promise<ModelUploadJob> {
  const from = job.status;
  const to = uploadJobMachine.next(from, event);
  const now = instant(timing.clock);
  const updates = [...JSON.parse(job.statusUpdates), { status: to, message, timestamp: iso(now) }];
  // Compare-and-set on the state: a job that moved meanwhile is refused like any other disallowed move.
  const { count } = await tx.modelUploadJob.updateMany({
    where: { id: job.id, status: from },
    data: { status: to, statusUpdates: JSON.stringify(updates), updatedAt: now },
  });
  if (count === 0) throw invalidTransition(uploadJobMachine.name, from, event);
  if (to === 'Complete') await tx.model.update({ where: { id: job.modelId }, data: { status: 'ready' } });
  if (to === 'Failed') await tx.model.deleteMany({ where: { id: job.modelId, status: 'pending' } });
  await enter(tx, timing, uploadJobMachine, { id: job.id, projectId: job.projectId, state: to });
  return tx.modelUploadJob.findUniqueOrThrow({ where: { id: job.id } });
}

/** The runner's timed steps of upload jobs. */
export function uploadProgression(timing: Timing): Progression<(typeof uploadJobMachine.states)[number]> {
  const job = (tx: Tx, id: string) => tx.modelUploadJob.findUniqueOrThrow({ where: { id } });
  const sourceOf = (j: ModelUploadJob) => {
    const { modelSource } = JSON.parse(j.args) as { modelSource: string };
    const source = parseSource(modelSource);
    // Checked at upload; a stored source that no longer parses is a server fault: retried, then given up (Failed).
    if (typeof source === 'string') throw new Error(`upload job ${j.id} has an unreadable source: ${source}`);
    return { modelSource, source };
  };
  return {
    machine: uploadJobMachine,
    load: async (tx, id) => {
      const j = await tx.modelUploadJob.findUnique({ where: { id } });
      return j && { id: j.id, projectId: j.projectId, state: j.status };
    },
    steps: {
      Queued: async (tx, id) => {
        const j = await job(tx, id);
        await moveJob(tx, timing, j, 'start', `Fetching and checking the weights from ${SOURCE_LABEL[sourceOf(j).source.kind]}.`);
      },
      Running: async (tx, id) => {
        const j = await job(tx, id);
        const { modelSource, source } = sourceOf(j);
        if (resolves(source)) return void (await moveJob(tx, timing, j, 'complete', 'Upload complete: the model is in the catalogue.'));
        const missing = source.kind === 'huggingface' ? `Repository not found: ${modelSource}.` : `Object not found: ${modelSource}.`;
        await moveJob(tx, timing, j, 'fail', missing);
      },
    },
    giveUp: async (tx, id) => void (await moveJob(tx, timing, await job(tx, id), 'fail', 'The upload failed on the server; please upload again.')),
  };
}
