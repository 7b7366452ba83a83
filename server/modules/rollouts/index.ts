// Module `rollouts` (spec/tags/rollouts.yaml): moving an endpoint's traffic from a source deployment to a target in
// steps checked against what the target served. Requests are checked in rules.ts, moves made in steps.ts (the
// caller's in handlers.ts, the step timers' on the durable runner), metric rules read in metrics.ts.
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import {
  cancelRollout,
  createRollout,
  deleteRollout,
  getRollout,
  listRollouts,
  pauseRollout,
  previewRolloutDefaults,
  promoteRollout,
  resumeRollout,
  startRollout,
} from './handlers.ts';
import { rolloutMachine, rolloutStepMachine } from './machine.ts';
import { rolloutProgression } from './steps.ts';

export const rollouts: ModuleDescriptor<'rollouts'> = {
  name: 'rollouts',
  handlers: {
    listRollouts,
    createRollout,
    previewRolloutDefaults,
    getRollout,
    deleteRollout,
    startRollout,
    pauseRollout,
    resumeRollout,
    cancelRollout,
    promoteRollout,
  },
  machines: [rolloutMachine, rolloutStepMachine],
  work: (services) => ({ [rolloutMachine.kind]: progressionWork(rolloutProgression(services), services) }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
