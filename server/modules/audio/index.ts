// Module `audio` (spec/tags/audio.yaml): transcription and translation of uploaded or linked audio, by the local
// engine (decoded and measured by ffmpeg; words from PocketSphinx when installed) or an upstream server; speech
// synthesis (espeak-ng, or an upstream server) and the speech models' voices.
import type { UploadRule } from '../../http/multipart.ts';
import type { ModuleDescriptor, UploadContext } from '../types.ts';
import { createTranscription, createTranslation } from './handlers.ts';

// What this module offers the others: audio by URL, as a batch line asks it.
export { transcribeByUrl } from './handlers.ts';

import { realtimeSpeech, realtimeTranscription } from './realtime.ts';
import { transcriptionModel, uploadTooLarge } from './rules.ts';
import { createSpeech, listVoices } from './speech.ts';

const rule = (task: 'transcribe' | 'translate'): UploadRule<UploadContext> => ({
  field: 'file',
  maxBytes: (c) => c.audioUploadLimit,
  tooLarge: (c) => uploadTooLarge(c.audioUploadLimit, c.audioUrlLimit),
  // `model` sent before the file, as the platform asks, is checked before any byte of the audio is stored.
  beforeFile: async ({ db, identity }, fields) => {
    if (typeof fields.model === 'string') await transcriptionModel(db.prisma, identity.projectId, fields.model, task);
  },
});

export const audio: ModuleDescriptor<'audio'> = {
  name: 'audio',
  handlers: { createTranscription, createTranslation, createSpeech, listVoices, realtimeTranscription, realtimeSpeech },
  uploads: { createTranscription: rule('transcribe'), createTranslation: rule('translate') },
};
