// The rollout's state machine and its steps' machine. A rollout is PENDING until started; RUNNING while its steps
// run (each step is one visit of RUNNING: `advance` moves to the next and bumps the epoch, so a step's timer fires
// once); PAUSED holds the step's clock; COMPLETED, ABORTED and CANCELED end it. The contract's other states
// (PAUSING, CANCELLING, ABORTING, STABILIZING, SYSTEM_PAUSED) are never entered here: every move happens whole in
// one transaction, so there is no in-between state to show, and nothing pauses a rollout but its caller.
import type { Rollout, RolloutStep } from '../../../generated/prisma/sqlite/client/client.ts';
import { defineMachine } from '../../core/machine.ts';
import { newEtag } from '../../http/etag.ts';
import { stored } from '../../runner/progress.ts';

export const rolloutMachine = defineMachine({
  name: 'rollout',
  kind: 'rollout',
  states: [
    'ROLLOUT_STATE_PENDING',
    'ROLLOUT_STATE_RUNNING',
    'ROLLOUT_STATE_PAUSED',
    'ROLLOUT_STATE_COMPLETED',
    'ROLLOUT_STATE_ABORTED',
    'ROLLOUT_STATE_CANCELED',
    'ROLLOUT_STATE_PAUSING',
    'ROLLOUT_STATE_CANCELLING',
    'ROLLOUT_STATE_ABORTING',
    'ROLLOUT_STATE_STABILIZING',
    'ROLLOUT_STATE_SYSTEM_PAUSED',
  ],
  events: ['start', 'advance', 'pause', 'resume', 'promote', 'complete', 'abort', 'cancel'],
  terminal: ['ROLLOUT_STATE_COMPLETED', 'ROLLOUT_STATE_ABORTED', 'ROLLOUT_STATE_CANCELED'],
  transitions: {
    ROLLOUT_STATE_PENDING: { start: 'ROLLOUT_STATE_RUNNING', cancel: 'ROLLOUT_STATE_CANCELED' },
    ROLLOUT_STATE_RUNNING: {
      advance: 'ROLLOUT_STATE_RUNNING',
      pause: 'ROLLOUT_STATE_PAUSED',
      promote: 'ROLLOUT_STATE_COMPLETED',
      complete: 'ROLLOUT_STATE_COMPLETED',
      abort: 'ROLLOUT_STATE_ABORTED',
      cancel: 'ROLLOUT_STATE_CANCELED',
    },
    ROLLOUT_STATE_PAUSED: { resume: 'ROLLOUT_STATE_RUNNING', promote: 'ROLLOUT_STATE_COMPLETED', cancel: 'ROLLOUT_STATE_CANCELED' },
  },
});

export type RolloutState = (typeof rolloutMachine.states)[number];
export type RolloutEvent = (typeof rolloutMachine.events)[number];

/** Every move bumps the epoch (a step's timer belongs to one visit of RUNNING) and the etag. */
export const rollouts = stored<Rollout>()({
  machine: rolloutMachine,
  table: (c) => c.rollout,
  field: 'state',
  epoch: 'epoch',
  stamp: (_r, _m, now) => ({ etag: newEtag(), updatedAt: now }),
});

/** A step waits (PENDING), runs its share of traffic for its duration (RUNNING), then PASSED its rules or FAILED. */
export const rolloutStepMachine = defineMachine({
  name: 'rollout step',
  kind: 'rollout_step',
  states: ['ROLLOUT_STEP_STATE_PENDING', 'ROLLOUT_STEP_STATE_RUNNING', 'ROLLOUT_STEP_STATE_PASSED', 'ROLLOUT_STEP_STATE_FAILED'],
  events: ['begin', 'pass', 'fail'],
  terminal: ['ROLLOUT_STEP_STATE_PASSED', 'ROLLOUT_STEP_STATE_FAILED'],
  transitions: {
    ROLLOUT_STEP_STATE_PENDING: { begin: 'ROLLOUT_STEP_STATE_RUNNING' },
    ROLLOUT_STEP_STATE_RUNNING: { pass: 'ROLLOUT_STEP_STATE_PASSED', fail: 'ROLLOUT_STEP_STATE_FAILED' },
  },
});

export const rolloutSteps = stored<RolloutStep>()({
  machine: rolloutStepMachine,
  table: (c) => c.rolloutStep,
  field: 'state',
  stamp: (_s, move, now) => (move.event === 'begin' ? { startedAt: now } : { completedAt: now }),
});
