// Module `batches` (spec/tags/batches.yaml): the batch API over Files. A batch's input file is validated and its
// lines run by the durable runner a chunk at a time (machine.ts, run.ts) through the inference module's own path,
// their answers and errors written to result files in Files (files.ts).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { cancelBatch, createBatch, getBatch, listBatches } from './handlers.ts';
import { batchMachine, batchProgression } from './machine.ts';

export const batches: ModuleDescriptor<'batches'> = {
  name: 'batches',
  handlers: { createBatch, listBatches, getBatch, cancelBatch },
  machines: [batchMachine],
  work: (services) => ({ [batchMachine.kind]: progressionWork(batchProgression(services), services) }),
  steer: (services) => ({ batch: { progression: batchProgression(services), creates: [] } }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
