// The remote upload's state machine, and the runner's steps that move it: PENDING -> RUNNING -> SUCCEEDED, or
// RUNNING -> ERROR -> RUNNING (a restart) while restarts are left, else FAILED. Every move records an event; a
// success adds the model's revision in the same step.
import type { RemoteUpload } from '../../../generated/prisma/sqlite/client/client.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
import { parseSource, resolves, SOURCE_LABEL } from '../models/index.ts';
import { recordEvent } from './events.ts';
import { addRevision } from './revisions.ts';

export const remoteUploadMachine = defineMachine({
  name: 'remote upload',
  kind: 'remote_upload',
  states: [
    'REMOTE_UPLOAD_STATUS_PENDING',
    'REMOTE_UPLOAD_STATUS_RUNNING',
    'REMOTE_UPLOAD_STATUS_ERROR',
    'REMOTE_UPLOAD_STATUS_SUCCEEDED',
    'REMOTE_UPLOAD_STATUS_FAILED',
  ],
  events: ['start', 'succeed', 'error', 'restart', 'fail'],
  terminal: ['REMOTE_UPLOAD_STATUS_SUCCEEDED', 'REMOTE_UPLOAD_STATUS_FAILED'],
  transitions: {
    REMOTE_UPLOAD_STATUS_PENDING: { start: 'REMOTE_UPLOAD_STATUS_RUNNING', fail: 'REMOTE_UPLOAD_STATUS_FAILED' },
    REMOTE_UPLOAD_STATUS_RUNNING: { succeed: 'REMOTE_UPLOAD_STATUS_SUCCEEDED', error: 'REMOTE_UPLOAD_STATUS_ERROR', fail: 'REMOTE_UPLOAD_STATUS_FAILED' },
    REMOTE_UPLOAD_STATUS_ERROR: { restart: 'REMOTE_UPLOAD_STATUS_RUNNING', fail: 'REMOTE_UPLOAD_STATUS_FAILED' },
  },
  timed: {
    REMOTE_UPLOAD_STATUS_PENDING: { duration: 'remote_upload_queue', defaultMs: 2_000 },
    REMOTE_UPLOAD_STATUS_RUNNING: { duration: 'remote_upload', defaultMs: 10_000 },
    REMOTE_UPLOAD_STATUS_ERROR: { duration: 'remote_upload_restart', defaultMs: 5_000 },
  },
});

type UploadEvent = (typeof remoteUploadMachine.events)[number];

/** Restarts an upload gets after its first attempt: a source cannot tell a missing repository from a passing outage. */
export const MAX_RESTARTS = 3;

/** Every move writes its message as the upload's `statusMessage`; a restart counts itself. */
export const remoteUploads = stored<RemoteUpload>()({
  machine: remoteUploadMachine,
  table: (c) => c.remoteUpload,
  field: 'status',
  stamp: (u, move, now, note = '') => ({
    statusMessage: note,
    updatedAt: now,
    ...(move.event === 'restart' ? { restartCount: u.restartCount + 1 } : {}),
  }),
});

const EVENT_TYPE: Record<UploadEvent, { type: string; level: string }> = {
  start: { type: 'upload.started', level: 'LEVEL_INFO' },
  succeed: { type: 'upload.succeeded', level: 'LEVEL_INFO' },
  error: { type: 'upload.errored', level: 'LEVEL_WARN' },
  restart: { type: 'upload.restarted', level: 'LEVEL_INFO' },
  fail: { type: 'upload.failed', level: 'LEVEL_ERROR' },
};

/** One move through `transition`, recorded as the upload's event with the same message. */
async function move(tx: Tx, timing: Timing, u: RemoteUpload, event: UploadEvent, note: string): Promise<RemoteUpload> {
  const moved = await transition(tx, timing, remoteUploads, u, event, { note });
  await recordEvent(tx, timing.clock, moved, EVENT_TYPE[event].type, EVENT_TYPE[event].level, note);
  return moved;
}

/** The runner's timed steps of remote uploads. */
export function remoteUploadProgression(timing: Timing): Progression<(typeof remoteUploadMachine.states)[number]> {
  const upload = (tx: Tx, id: string) => tx.remoteUpload.findUniqueOrThrow({ where: { id } });
  const sourceOf = (u: RemoteUpload) => {
    const source = parseSource(u.remoteUrl);
    // Checked at creation; a stored source that no longer parses is a server fault: retried, then given up (FAILED).
    if (typeof source === 'string') throw new Error(`remote upload ${u.id} has an unreadable source: ${source}`);
    return source;
  };
  const fetching = (u: RemoteUpload) => `Fetching the weights from ${SOURCE_LABEL[sourceOf(u).kind]}.`;
  return {
    stored: remoteUploads,
    steps: {
      REMOTE_UPLOAD_STATUS_PENDING: async (tx, id) => {
        const u = await upload(tx, id);
        await move(tx, timing, u, 'start', fetching(u));
      },
      REMOTE_UPLOAD_STATUS_RUNNING: async (tx, id) => {
        const u = await upload(tx, id);
        const source = sourceOf(u);
        if (resolves(source)) {
          const revision = await addRevision(tx, timing.clock, u);
          return void (await move(tx, timing, u, 'succeed', `Upload complete: revision ${revision.id} of model ${u.modelId}.`));
        }
        const missing = source.kind === 'huggingface' ? `Repository not found: ${u.remoteUrl}.` : `Object not found: ${u.remoteUrl}.`;
        if (u.restartCount < u.maxRestarts) {
          await move(tx, timing, u, 'error', `${missing} Restarting (${u.restartCount + 1} of ${u.maxRestarts}).`);
        } else {
          await move(tx, timing, u, 'fail', `${missing} Gave up after ${u.restartCount} restarts.`);
        }
      },
      REMOTE_UPLOAD_STATUS_ERROR: async (tx, id) => {
        const u = await upload(tx, id);
        await move(tx, timing, u, 'restart', fetching(u));
      },
    },
    // The error's message is the upload's status message and its event's (an upload has no error code).
    failure: { events: ['fail', 'error'], fail: (tx, u, event, error) => move(tx, timing, u, event as UploadEvent, error.message) },
    giveUp: async (tx, id) => void (await move(tx, timing, await upload(tx, id), 'fail', 'The upload failed on the server; please upload again.')),
  };
}
