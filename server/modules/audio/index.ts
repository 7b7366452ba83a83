// Module `audio` (spec/tags/audio.yaml): transcription and translation of uploaded or linked audio, by the local
// engine (decoded and measured by ffmpeg; words from PocketSphinx when installed) or an upstream server.
import type { UploadRule } from '../../http/multipart.ts';
import type { ModuleDescriptor } from '../types.ts';
import { createTranscription, createTranslation } from './handlers.ts';
import { uploadTooLarge } from './rules.ts';

const upload: UploadRule = { field: 'file', maxBytes: (c) => c.audioUploadLimit, tooLarge: (c) => uploadTooLarge(c.audioUploadLimit, c.audioUrlLimit) };

export const audio: ModuleDescriptor<'audio'> = {
  name: 'audio',
  handlers: { createTranscription, createTranslation },
  uploads: { createTranscription: upload, createTranslation: upload },
};
