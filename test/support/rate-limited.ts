// The operations the spec marks `x-rate-limited: true`, each with a request builder: test/rate-limits.test.ts runs
// every limiter test over every row (so the 429 and 503 of each limited operation are observed there), and checks
// that the rows and the spec's marks agree. A newly limited operation adds one row here.
import type supertest from 'supertest';
import type { OperationId } from '../../generated/operations.ts';
import type { Caller, TestPlatform } from './platform.ts';

export interface LimitedOperation {
  /** A serverless model this operation serves. */
  model: string;
  /**
   * A request that succeeds for `model`, carrying `text` where the model reads it (the prompt, the input, the
   * query), so that its token estimate grows with `text`.
   */
  request: (caller: Caller, model: string, text: string) => supertest.Test;
  /** A dedicated endpoint's `model` this operation serves (made for the test), when it serves dedicated endpoints. */
  dedicated?: (t: TestPlatform) => Promise<string>;
}

/** Half a second of silence as a 16 kHz mono 16-bit WAV file: the smallest audio the transcription operations take. */
function silenceWav(seconds = 0.5): Buffer {
  const data = Math.round(16000 * seconds) * 2;
  const b = Buffer.alloc(44 + data);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + data, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(16000, 24);
  b.writeUInt32LE(32000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(data, 40);
  return b;
}
const WAV = silenceWav();
/** Audio: `model` before `file`, as the platform asks; `text` is the prompt (what the recogniser would read). */
const audio = (path: string) => (c: Caller, model: string, text: string) =>
  c.http.post(path).field('model', model).field('prompt', text).attach('file', WAV, 'silence.wav');

export const limitedOperations: Partial<Record<OperationId, LimitedOperation>> = {
  createChatCompletion: {
    model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    request: (c, model, text) => c.http.post('/v1/chat/completions').send({ model, messages: [{ role: 'user', content: text }], max_tokens: 16 }),
    dedicated: async (t) => {
      const rows = await t.services.db.prisma.v1Endpoint.findMany({ where: { projectId: t.caller.identity.projectId, state: 'STARTED' } });
      return `${t.caller.identity.projectSlug}/${rows[0]!.name}`;
    },
  },
  createCompletion: {
    model: 'mistralai/Mixtral-8x7B-v0.1',
    request: (c, model, text) => c.http.post('/v1/completions').send({ model, prompt: text, max_tokens: 16 }),
    dedicated: async (t) => {
      const rows = await t.services.db.prisma.v1Endpoint.findMany({ where: { projectId: t.caller.identity.projectId, state: 'STARTED' } });
      return `${t.caller.identity.projectSlug}/${rows[0]!.name}`;
    },
  },
  createEmbedding: {
    model: 'BAAI/bge-base-en-v1.5',
    request: (c, model, text) => c.http.post('/v1/embeddings').send({ model, input: text }),
  },
  createImage: {
    model: 'black-forest-labs/FLUX.1-schnell',
    request: (c, model, text) =>
      c.http.post('/v1/images/generations').send({ model, prompt: text, width: 64, height: 64, steps: 1, response_format: 'base64' }),
  },
  createTranscription: { model: 'openai/whisper-large-v3', request: audio('/v1/audio/transcriptions') },
  createTranslation: { model: 'openai/whisper-large-v3', request: audio('/v1/audio/translations') },
  createSpeech: {
    model: 'hexgrad/Kokoro-82M',
    request: (c, model, text) => c.http.post('/v1/audio/speech').send({ model, input: text, voice: 'af_alloy', response_format: 'raw', sample_rate: 8000 }),
  },
  rerank: {
    model: 'Salesforce/Llama-Rank-v1',
    request: (c, model, text) => c.http.post('/v1/rerank').send({ model, query: text, documents: ['a llama', 'a panda'] }),
  },
};
