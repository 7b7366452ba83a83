// Module `models` (spec/tags/models.yaml): the model catalogue (catalogue.ts), uploads of models and adapters
// (rules in upload.ts, sources in sources.ts) and their jobs, which the runner moves through the upload job's
// machine (machine.ts).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { seedCatalogue } from './catalogue.ts';
import { getJob, listJobs, listModels, uploadModel } from './handlers.ts';
import { uploadJobMachine, uploadProgression } from './machine.ts';

// What this module offers the others.
export {
  canonicalModelId,
  capabilities,
  catalogue,
  catalogueModel,
  createUploadedModel,
  findModel,
  isUploadedModelId,
  nameKey,
  notServerless,
  type SpeechVoice,
  serverlessModel,
  speechVoices,
} from './catalogue.ts';
export { architectureOf, parseSource, resolves, SOURCE_LABEL, type Source } from './sources.ts';

export const models: ModuleDescriptor<'models'> = {
  name: 'models',
  handlers: { listModels, uploadModel, listJobs, getJob },
  seed: seedCatalogue,
  machines: [uploadJobMachine],
  work: (services) => ({ [uploadJobMachine.kind]: progressionWork(uploadProgression(services), services) }),
  steer: (services) => ({ model_upload: { progression: uploadProgression(services), creates: ['uploadModel'] } }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
