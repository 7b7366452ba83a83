// Module `files` (spec/tags/files.yaml): uploaded data files, kept on disk, validated on the runner when they are
// fine-tuning datasets (rules.ts, machine.ts). Other modules store and read files through store.ts.
import type { Config } from '../../core/config.ts';
import { apiError } from '../../core/errors.ts';
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { createFileUpload, deleteFile, getFileContent, listFiles, putFileContent, retrieveFile, uploadFile } from './handlers.ts';
import { fileMachine, fileProgression } from './machine.ts';
import { verifyUpload } from './signature.ts';

export { checkPurpose, datasetRows, type FileType, type Purpose, type Report, sampleTokens } from './rules.ts';
// What this module offers the others.
export { checkSignature, ensureUploadKey, projectIdentity, signedUrl } from './signature.ts';
export {
  type File,
  fileLocation,
  filePath,
  findFile,
  findFileIn,
  findFileNamed,
  type NewFile,
  newFileId,
  readFileContent,
  recordFile,
  type StoreServices,
  storeFile,
} from './store.ts';

import { filesSection } from './seeded.ts';

const tooLarge = (c: Config) => apiError(413, 'file_too_large', `The file is larger than this server takes (${c.filesMaxBytes} bytes).`, 'file');

export const files: ModuleDescriptor<'files'> = {
  name: 'files',
  handlers: { uploadFile, createFileUpload, putFileContent, listFiles, retrieveFile, deleteFile, getFileContent },
  // The file part (multipart) or the whole body (the signed upload's PUT) is streamed to disk as it arrives
  // (http/multipart.ts, http/raw-body.ts), at most FILES_MAX_BYTES.
  uploads: {
    uploadFile: { field: 'file', maxBytes: (c) => c.filesMaxBytes, tooLarge },
    putFileContent: { field: 'file', raw: true, maxBytes: (c) => c.filesMaxBytes, tooLarge },
  },
  // The upload URL's signature, not a key, authorises the PUT (the official client sends none).
  signed: { putFileContent: verifyUpload },
  machines: [fileMachine],
  work: (services) => ({ [fileMachine.kind]: progressionWork(fileProgression(services), services) }),
  fixtureSections: { files: filesSection },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
