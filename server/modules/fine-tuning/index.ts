// Module `fine-tuning` (spec/tags/fine-tuning.yaml): fine-tuning jobs, their request rules (rules.ts), their machine
// and the runner's steps (machine.ts), and the local engine's deterministic training simulation (training.ts).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { fineTunesSection } from './create.ts';
import {
  cancelFineTune,
  cancelFineTuneUnprefixed,
  checkTokenizedUrl,
  createFineTune,
  deleteFineTune,
  downloadFineTune,
  downloadFineTuneTokenizedDataset,
  estimateFineTunePrice,
  estimateFineTunePriceUnprefixed,
  getFineTuneMetrics,
  getFineTuneMetricsUnprefixed,
  getFineTuneModelLimits,
  listFineTuneCheckpoints,
  listFineTuneEvents,
  listFineTuneModels,
  listFineTunes,
  previewFineTune,
  retrieveFineTune,
  retrieveFineTuneTokenizedDataset,
} from './handlers.ts';
import { fineTuneMachine, fineTuneProgression } from './machine.ts';

// What this module offers the others: fixtures' jobs (the Control tag's applyFixtures).
export { fineTunable } from './rules.ts';

export const fineTuning: ModuleDescriptor<'fine-tuning'> = {
  name: 'fine-tuning',
  handlers: {
    createFineTune,
    listFineTunes,
    retrieveFineTune,
    deleteFineTune,
    cancelFineTune,
    cancelFineTuneUnprefixed,
    estimateFineTunePriceUnprefixed,
    getFineTuneMetricsUnprefixed,
    listFineTuneEvents,
    listFineTuneCheckpoints,
    getFineTuneMetrics,
    downloadFineTune,
    estimateFineTunePrice,
    listFineTuneModels,
    previewFineTune,
    getFineTuneModelLimits,
    retrieveFineTuneTokenizedDataset,
    downloadFineTuneTokenizedDataset,
  },
  // The tokenized dataset's URL is signed: whoever holds it downloads without a key.
  signed: { downloadFineTuneTokenizedDataset: checkTokenizedUrl },
  machines: [fineTuneMachine],
  work: (services) => ({ [fineTuneMachine.kind]: progressionWork(fineTuneProgression(services), services) }),
  steer: (services) => ({ fine_tune: { progression: fineTuneProgression(services), creates: ['createFineTune'] } }),
  fixtureSections: { fine_tunes: fineTunesSection },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
