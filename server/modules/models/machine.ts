// The upload job's state machine, and the runner's steps that move it: Queued -> Running -> Complete | Failed.
// Failed straight from Queued happens only when the runner gives up on a step that keeps failing.
import type { ModelUploadJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
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
 * Every move appends a status update with the mover's message. Complete makes the job's model ready; Failed deletes
 * its pending model (the name is free again; the job keeps what was asked).
 */
export const uploadJobs = stored<ModelUploadJob>()({
  machine: uploadJobMachine,
  table: (c) => c.modelUploadJob,
  field: 'status',
  stamp: (job, move, now, message = '') => ({
    statusUpdates: JSON.stringify([...JSON.parse(job.statusUpdates), { status: move.to, message, timestamp: iso(now) }]),
    updatedAt: now,
  }),
  onEnter: {
    Complete: async (tx, job) => void (await tx.model.update({ where: { id: job.modelId }, data: { status: 'ready' } })),
    Failed: async (tx, job) => void (await tx.model.deleteMany({ where: { id: job.modelId, status: 'pending' } })),
  },
});

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
    stored: uploadJobs,
    steps: {
      Queued: async (tx, id) => {
        const j = await job(tx, id);
        await transition(tx, timing, uploadJobs, j, 'start', { note: `Fetching and checking the weights from ${SOURCE_LABEL[sourceOf(j).source.kind]}.` });
      },
      Running: async (tx, id) => {
        const j = await job(tx, id);
        const { modelSource, source } = sourceOf(j);
        if (resolves(source))
          return void (await transition(tx, timing, uploadJobs, j, 'complete', { note: 'Upload complete: the model is in the catalogue.' }));
        const missing = source.kind === 'huggingface' ? `Repository not found: ${modelSource}.` : `Object not found: ${modelSource}.`;
        await transition(tx, timing, uploadJobs, j, 'fail', { note: missing });
      },
    },
    // The error's message is the job's last status update (a job has no error code).
    failure: { events: ['fail'], fail: (tx, j, _event, error) => transition(tx, timing, uploadJobs, j, 'fail', { note: error.message }) },
    giveUp: async (tx, id) =>
      void (await transition(tx, timing, uploadJobs, await job(tx, id), 'fail', { note: 'The upload failed on the server; please upload again.' })),
  };
}
