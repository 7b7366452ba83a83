// Module `model-catalogue` (spec/tags/model-catalogue.yaml): the v2 model catalogue: a project's models (handlers.ts,
// rules in rules.ts), the revisions each succeeded upload adds (revisions.ts), and remote uploads, which the runner
// moves through their machine (machine.ts) and records as events (events.ts).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import {
  createCatalogueModel,
  createRemoteModelUpload,
  deleteCatalogueModel,
  getCatalogueModel,
  getCatalogueModelRevision,
  getRemoteModelUpload,
  listCatalogueModelFiles,
  listCatalogueModelRevisions,
  listCatalogueModels,
  listOrganizationModels,
  listRemoteModelUploadEvents,
  listRemoteModelUploads,
  updateCatalogueModel,
} from './handlers.ts';
import { remoteUploadMachine, remoteUploadProgression } from './machine.ts';

// What this module offers the others.
export { catalogueRevision, isCatalogueModel } from './revisions.ts';

export const modelCatalogue: ModuleDescriptor<'model-catalogue'> = {
  name: 'model-catalogue',
  handlers: {
    listCatalogueModels,
    createCatalogueModel,
    getCatalogueModel,
    updateCatalogueModel,
    deleteCatalogueModel,
    listCatalogueModelFiles,
    listCatalogueModelRevisions,
    getCatalogueModelRevision,
    listRemoteModelUploads,
    createRemoteModelUpload,
    getRemoteModelUpload,
    listRemoteModelUploadEvents,
    listOrganizationModels,
  },
  machines: [remoteUploadMachine],
  work: (services) => ({ [remoteUploadMachine.kind]: progressionWork(remoteUploadProgression(services), services) }),
  steer: (services) => ({ remote_upload: { progression: remoteUploadProgression(services), creates: ['createRemoteModelUpload'] } }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
