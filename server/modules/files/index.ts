// Module `files` (spec/tags/files.yaml): uploaded data files, kept on disk, validated on the runner when they are
// fine-tuning datasets (rules.ts, machine.ts). Other modules store and read files through store.ts.
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { deleteFile, getFileContent, listFiles, retrieveFile, uploadFile } from './handlers.ts';
import { fileMachine, fileProgression } from './machine.ts';

export { findFile, readFileContent, storeFile, filePath, type File, type NewFile } from './store.ts';
export { datasetRows, sampleTokens, type Report } from './rules.ts';

export const files: ModuleDescriptor<'files'> = {
  name: 'files',
  handlers: { uploadFile, listFiles, retrieveFile, deleteFile, getFileContent },
  machines: [fileMachine],
  work: (services) => ({ [fileMachine.kind]: progressionWork(fileProgression(services), services) }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
