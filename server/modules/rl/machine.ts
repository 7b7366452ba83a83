// The three machines of reinforcement learning, and the runner's steps that move them:
// - model resources are provisioned (PENDING -> CREATING -> READY) and stopped (STOPPING -> STOPPED);
// - a training session starts once its resources are READY (its model made by the engine, outside any transaction),
//   runs its operations, expires when idle, and stops once the operation in hand has finished;
// - an operation waits (PENDING) until every earlier operation of its session has finished, runs (RUNNING: the
//   engine's work outside any transaction, then one fenced commit of its output and the session's new state), and
//   ends COMPLETED or FAILED (operations.ts).
import type { RlModelResources, RlOperation, RlSession } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { duration } from '../../core/config.ts';
import { defineMachine } from '../../core/machine.ts';
import { type Progression, stored, transition } from '../../runner/progress.ts';
import type { Services } from '../types.ts';
import { abandonPending, hasRunning, type Ran, runOperation, type Started, sessionRow, settleOperation, startNext, startSession } from './operations.ts';

const R = 'MODEL_RESOURCES_STATUS_';
export const resourcesMachine = defineMachine({
  name: 'model resources',
  kind: 'rl_model_resources',
  states: [`${R}PENDING`, `${R}CREATING`, `${R}READY`, `${R}ERROR`, `${R}STOPPING`, `${R}STOPPED`],
  events: ['provision', 'ready', 'stop', 'stopped', 'fail'],
  terminal: [`${R}STOPPED`],
  transitions: {
    [`${R}PENDING`]: { provision: `${R}CREATING`, stop: `${R}STOPPING`, fail: `${R}ERROR` },
    [`${R}CREATING`]: { ready: `${R}READY`, stop: `${R}STOPPING`, fail: `${R}ERROR` },
    [`${R}READY`]: { stop: `${R}STOPPING`, fail: `${R}ERROR` },
    [`${R}ERROR`]: { stop: `${R}STOPPING` },
    [`${R}STOPPING`]: { stopped: `${R}STOPPED` },
  },
  timed: {
    [`${R}PENDING`]: { duration: 'rl_resources_queue', defaultMs: 0 },
    [`${R}CREATING`]: { duration: 'rl_resources_provision', defaultMs: 0 },
    [`${R}STOPPING`]: { duration: 'rl_resources_stop', defaultMs: 0 },
  },
});

const S = 'TRAINING_SESSION_STATUS_';
export const sessionMachine = defineMachine({
  name: 'training session',
  kind: 'rl_session',
  states: [`${S}CREATING`, `${S}RUNNING`, `${S}STOPPING`, `${S}STOPPED`, `${S}ERROR`, `${S}EXPIRED`],
  events: ['start', 'stop', 'stopped', 'expire', 'fail'],
  terminal: [`${S}STOPPED`, `${S}ERROR`, `${S}EXPIRED`],
  transitions: {
    [`${S}CREATING`]: { start: `${S}RUNNING`, stop: `${S}STOPPING`, fail: `${S}ERROR` },
    [`${S}RUNNING`]: { stop: `${S}STOPPING`, expire: `${S}EXPIRED`, fail: `${S}ERROR` },
    [`${S}STOPPING`]: { stopped: `${S}STOPPED`, fail: `${S}ERROR` },
  },
  timed: {
    [`${S}CREATING`]: { duration: 'rl_session_start', defaultMs: 0 },
    [`${S}RUNNING`]: { duration: 'rl_session_idle', defaultMs: 3_600_000 },
    [`${S}STOPPING`]: { duration: 'rl_session_stop', defaultMs: 0 },
  },
});

const O = 'TRAINING_OPERATION_STATUS_';
export const operationMachine = defineMachine({
  name: 'training operation',
  kind: 'rl_operation',
  states: [`${O}PENDING`, `${O}RUNNING`, `${O}COMPLETED`, `${O}FAILED`],
  events: ['start', 'complete', 'fail', 'abandon'],
  terminal: [`${O}COMPLETED`, `${O}FAILED`],
  transitions: {
    [`${O}PENDING`]: { start: `${O}RUNNING`, abandon: `${O}FAILED` },
    [`${O}RUNNING`]: { complete: `${O}COMPLETED`, fail: `${O}FAILED` },
  },
  timed: { [`${O}RUNNING`]: { duration: 'rl_operation', defaultMs: 0 } },
});

export type ResourcesStatus = (typeof resourcesMachine.states)[number];
export type SessionStatus = (typeof sessionMachine.states)[number];
export type OperationStatus = (typeof operationMachine.states)[number];
export const ACTIVE_SESSION: SessionStatus[] = [`${S}CREATING`, `${S}RUNNING`];
export const LIVE_RESOURCES: ResourcesStatus[] = [`${R}PENDING`, `${R}CREATING`, `${R}READY`];

const stamp = (_r: unknown, _m: unknown, now: bigint) => ({ updatedAt: now });

export const resourcesRows = stored<RlModelResources>()({ machine: resourcesMachine, table: (c) => c.rlModelResources, field: 'status', stamp });
export const operations = stored<RlOperation>()({ machine: operationMachine, table: (c) => c.rlOperation, field: 'status', stamp });
export const sessions = stored<RlSession>()({
  machine: sessionMachine,
  table: (c) => c.rlSession,
  field: 'status',
  stamp,
});

export function resourcesProgression(services: Services): Progression<ResourcesStatus> {
  const move = (event: (typeof resourcesMachine.events)[number]) => async (tx: Parameters<Progression<ResourcesStatus>['giveUp'] & {}>[0], id: string) => {
    await transition(tx, services, resourcesRows, await tx.rlModelResources.findUniqueOrThrow({ where: { id } }), event);
  };
  return {
    stored: resourcesRows,
    steps: { [`${R}PENDING`]: move('provision'), [`${R}CREATING`]: move('ready'), [`${R}STOPPING`]: move('stopped') },
    failure: {
      events: ['fail'],
      fail: (tx, r, event, error) =>
        transition(tx, services, resourcesRows, r, event as 'fail', {
          data: { errorCode: error.code, errorMessage: error.message, erroredAt: instant(services.clock) },
        }),
    },
  };
}

/** Fails a session with `code`: its waiting operations fail too. */
async function failSession(tx: Parameters<typeof transition>[0], services: Services, s: RlSession, code: string, message: string) {
  await abandonPending(tx, services, s.id, 'TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE', `Training session '${s.id}' failed: ${message}`);
  return transition(tx, services, sessions, s, 'fail', { data: { errorCode: code, errorMessage: message, erroredAt: instant(services.clock) } });
}

export function sessionProgression(services: Services): Progression<SessionStatus> {
  return {
    stored: sessions,
    steps: {
      // Starts once the resources are READY: the engine makes the model (or loads the checkpoint resumed from).
      [`${S}CREATING`]: {
        work: (id: string) => startSession(services, id),
        async apply(tx, id, started: Started) {
          const s = await sessionRow(tx, id);
          if (started.kind === 'wait') return 'wait';
          if (started.kind === 'failed') {
            await failSession(tx, services, s, started.code, started.message);
            return;
          }
          await transition(tx, services, sessions, s, 'start', {
            data: { trainer: started.trainer, sampler: started.sampler, stateVersion: 1, step: started.step, weightsVersion: started.step },
          });
          // The operations that waited for the session run now, in order.
          await startNext(tx, services, id);
        },
      },
      // Expires once no operation has been submitted for the idle duration (checked every that long) and none runs.
      [`${S}RUNNING`]: async (tx, id) => {
        const s = await sessionRow(tx, id);
        const idle = duration(services.config, 'rl_session_idle', 3_600_000);
        if (services.clock.now() - Number(s.lastActivityAt) < idle || (await hasRunning(tx, id))) return 'wait';
        await abandonPending(tx, services, id, 'TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE', `Training session '${id}' expired.`);
        await transition(tx, services, sessions, s, 'expire');
      },
      // Stops once the operation in hand (if any) has finished: nothing a caller was told is running is cut short.
      [`${S}STOPPING`]: async (tx, id) => {
        if (await hasRunning(tx, id)) return 'wait';
        await transition(tx, services, sessions, await sessionRow(tx, id), 'stopped');
      },
    },
    failure: {
      events: ['fail'],
      fail: (tx, s, _event, error) => failSession(tx, services, s, 'TRAINING_SESSION_ERROR_CODE_SESSION_FAILED', error.message),
    },
    giveUp: async (tx, id, error) => {
      const s = await sessionRow(tx, id);
      if (sessionMachine.can(s.status, 'fail')) await failSession(tx, services, s, 'TRAINING_SESSION_ERROR_CODE_SESSION_FAILED', error.slice(0, 500));
    },
  };
}

export function operationProgression(services: Services): Progression<OperationStatus> {
  return {
    stored: operations,
    steps: {
      [`${O}RUNNING`]: {
        work: (_id: string, row: RlOperation) => runOperation(services, row),
        apply: (tx, _id, ran: Ran, row: RlOperation) => settleOperation(tx, services, row, ran),
      },
    },
    failure: {
      events: ['fail'],
      fail: (tx, op, _event, error) =>
        settleOperation(tx, services, op, { kind: 'failed', code: 'TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR', message: error.message }),
    },
    giveUp: async (tx, id, error) => {
      const op = await tx.rlOperation.findUniqueOrThrow({ where: { id } });
      if (op.status === `${O}RUNNING`)
        await settleOperation(tx, services, op, { kind: 'failed', code: 'TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR', message: error.slice(0, 500) });
    },
  };
}
