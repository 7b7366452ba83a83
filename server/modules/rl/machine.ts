// The three machines of reinforcement learning, and the runner's steps that move them:
// - model resources are provisioned (PENDING -> CREATING -> READY) and stopped (STOPPING -> STOPPED);
// - a training session starts once its resources are READY (its model made by the engine, outside any transaction),
//   runs its operations, expires when idle, and stops once the operation in hand has finished;
// - an operation waits (PENDING) until every earlier operation of its session has finished, runs (RUNNING: the
//   engine's work outside any transaction, then one fenced commit of its output and the session's new state), and
//   ends COMPLETED or FAILED (operations.ts).
// The runner's steps that move them are progressions.ts.
import type { RlModelResources, RlOperation, RlSession } from '../../../generated/prisma/sqlite/client/client.ts';
import { defineMachine } from '../../core/machine.ts';
import { stored } from '../../runner/progress.ts';

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
