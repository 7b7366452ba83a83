// Module `files` (spec/tags/files.yaml): uploaded data files, kept on disk, validated on the runner when they are
// fine-tuning datasets (rules.ts, machine.ts). Other modules store and read files through store.ts.
import { apiError } from '../../core/errors.ts';
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { deleteFile, getFileContent, listFiles, retrieveFile, uploadFile } from './handlers.ts';
import { fileMachine, fileProgression } from './machine.ts';

export { findFile, readFileContent, storeFile, filePath, type File, type NewFile } from './store.ts';
export { datasetRows, sampleTokens, type Report } from './rules.ts';

export const files: ModuleDescriptor<'files'> = {
  name: 'files',
  handlers: { uploadFile, listFiles, retrieveFile, deleteFile, getFileContent },
  // The file part is streamed to disk as it arrives (http/multipart.ts), at most FILES_MAX_BYTES.
  uploads: {
    uploadFile: {
      field: 'file',
      maxBytes: (c) => c.filesMaxBytes,
      tooLarge: (c) => apiError(413, 'file_too_large', `The file is larger than this server takes (${c.filesMaxBytes} bytes).`, 'file'),
    },
  },
  machines: [fileMachine],
  work: (services) => ({ [fileMachine.kind]: progressionWork(fileProgression(services), services) }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
