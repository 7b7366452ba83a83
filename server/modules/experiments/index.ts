// Module `experiments` (spec/tags/experiments.yaml): A/B experiments, whose members' percents steer an endpoint's
// traffic split (handlers/ab.ts), and shadow experiments with their targets (handlers/shadow.ts), whose sampled
// copies of the endpoint's requests run on the targets off the caller's path (mirror.ts, sampling.ts).
import type { ModuleDescriptor } from '../types.ts';
import { createABExperiment, deleteABExperiment, getABExperiment, listABExperiments, updateABExperiment } from './handlers/ab.ts';
import {
  createShadowExperiment,
  createShadowTarget,
  deleteShadowExperiment,
  deleteShadowTarget,
  getShadowExperiment,
  getShadowExperimentResults,
  getShadowTarget,
  listShadowExperiments,
  listShadowTargets,
  updateShadowExperiment,
  updateShadowTarget,
} from './handlers/shadow.ts';

// What this module offers the others: inference calls `mirror` once per request a v2 endpoint answered.
export { type Answered, AnswerText, mirror, type ShadowCounts, shadowsOf } from './mirror.ts';
// The console's read across projects (control/console.ts).
export { experimentsReport } from './report.ts';

export const experiments: ModuleDescriptor<'experiments'> = {
  name: 'experiments',
  handlers: {
    listABExperiments,
    createABExperiment,
    getABExperiment,
    updateABExperiment,
    deleteABExperiment,
    listShadowExperiments,
    createShadowExperiment,
    getShadowExperiment,
    getShadowExperimentResults,
    updateShadowExperiment,
    deleteShadowExperiment,
    listShadowTargets,
    createShadowTarget,
    getShadowTarget,
    updateShadowTarget,
    deleteShadowTarget,
  },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
