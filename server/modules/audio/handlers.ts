// Module `audio`: transcription and translation. parse -> model -> audio (the upload, or the URL fetched) -> engine
// (local: decoded, measured, recognised when a recogniser is installed; or an upstream server) -> response format.
import { existsSync, openAsBlob, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { badRequest, storageFailure, withoutPaths } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import { decodeAudio, UnsupportedAudio } from '../../engines/audio.ts';
import { ffmpegPath } from '../../engines/ffmpeg.ts';
import type { UpstreamRoute } from '../../engines/routes.ts';
import { findRecogniser, type Transcript, transcribeLocally } from '../../engines/transcription.ts';
import { upstreamFetch } from '../../engines/upstream.ts';
import { temporaryFile, type Upload } from '../../http/multipart.ts';
import type { Context, Services } from '../types.ts';
import { audioUrl, DEFAULT_MODEL, downloadAudio, MAX_SECONDS, transcriptionModel } from './rules.ts';
import { type ResponseFormat, transcriptReply } from './wire.ts';

type Ctx = Context<'createTranscription'> | Context<'createTranslation'>;
type Task = 'transcribe' | 'translate';

interface Fields {
  model?: string;
  file: unknown;
  language?: string;
  prompt?: string;
  response_format?: ResponseFormat;
  temperature?: number;
  timestamp_granularities?: string | string[];
  diarize?: boolean;
  min_speakers?: number;
  max_speakers?: number;
}

async function run(ctx: Ctx, task: Task) {
  const body = ctx.body as unknown as Fields;
  const model = await transcriptionModel(ctx.db.prisma, ctx.identity.projectId, body.model ?? DEFAULT_MODEL, task);
  const upload = ctx.uploads.file as Upload | undefined;
  const url = upload ? undefined : audioUrl(body.file);
  const format = body.response_format ?? 'json';
  const granularities = body.timestamp_granularities === undefined ? ['segment'] : [body.timestamp_granularities].flat();
  const route = ctx.engines.routeFor('transcription', model.id);
  // An answer interceptor (the control plane's scripted answers) may stand in for the engine: the audio is not read.
  const intercepted = await ctx.engines.intercept.transcription?.({ operationId: ctx.operationId, model: model.id, body });
  const transcript = intercepted
    ? { ...intercepted.value, headers: intercepted.headers }
    : route.engine === 'upstream'
      ? await upstream(route, task, model.id, body, upload, url!, format)
      : await local(ctx, task, body, upload, url);
  return transcriptReply(transcript, format, task, granularities.includes('word'));
}

async function local(ctx: Ctx, task: Task, body: Fields, upload: Upload | undefined, url: URL | undefined): Promise<Transcript> {
  if (body.diarize) throw badRequest('The local engine cannot tell speakers apart: send diarize false (or omit it).', 'diarize', 'diarization_not_supported');
  const work = temporaryFile(join(ctx.config.dataDir, 'tmp'), 'audio');
  try {
    let input = upload?.path;
    if (!input) {
      input = `${work}.in`;
      await downloadAudio(url!, input, ctx.config.audioUrlLimit, ctx.config.urlFetch);
    }
    let decoded: Awaited<ReturnType<typeof decodeAudio>>;
    try {
      decoded = await decodeAudio(ffmpegPath(ctx.config.ffmpegPath), input, `${work}.pcm`, MAX_SECONDS);
    } catch (err) {
      if (err instanceof UnsupportedAudio) {
        // ffmpeg could not read its input or write its output because the temporary files went (DATA_DIR/tmp removed
        // or replaced while the request ran): the storage failed, not the caller's audio.
        if (!existsSync(input) || !existsSync(dirname(work))) throw storageFailure(err);
        // ffmpeg's words name its input and output files: the caller's upload (or URL), and no path of the server.
        const why = withoutPaths(err.message, { [input]: upload ? upload.filename : url!.href, [`${work}.pcm`]: 'the decoded audio' });
        throw badRequest(`'file' cannot be used: ${why}. Send wav, mp3, m4a, webm, flac, ogg, opus or aac audio.`, 'file', 'unsupported_format');
      }
      throw err;
    }
    if (decoded.duration > MAX_SECONDS) throw badRequest(`The audio is over the ${MAX_SECONDS / 3600}-hour limit.`, 'file', 'audio_too_long');
    // The recogniser knows English only: a translation of English speech is its transcript; other speech gets no words.
    return await transcribeLocally(findRecogniser(ctx.config.pocketsphinxPath), decoded, { task, language: body.language ?? 'en' });
  } finally {
    rmSync(`${work}.in`, { force: true });
    rmSync(`${work}.pcm`, { force: true });
  }
}

/** The same request to an upstream OpenAI-compatible server: the file as uploaded (or its URL), the same fields. */
async function upstream(
  route: UpstreamRoute,
  task: Task,
  model: string,
  body: Fields,
  upload: Upload | undefined,
  url: URL,
  format: ResponseFormat,
): Promise<Transcript> {
  const form = new FormData();
  // The model first, as the platform asks, then the audio.
  form.append('model', route.model ?? model);
  if (upload) form.append('file', await openAsBlob(upload.path, { type: upload.mimeType }), upload.filename);
  else form.append('file', url.href);
  const verbose = format !== 'json' && format !== 'text';
  form.append('response_format', verbose ? 'verbose_json' : 'json');
  for (const key of ['language', 'prompt', 'temperature', 'diarize', 'min_speakers', 'max_speakers'] as const) {
    if (body[key] !== undefined) form.append(key, String(body[key]));
  }
  for (const g of body.timestamp_granularities === undefined ? [] : [body.timestamp_granularities].flat()) form.append('timestamp_granularities[]', g);
  const res = await upstreamFetch(route, task === 'transcribe' ? '/audio/transcriptions' : '/audio/translations', form);
  const answer = (await res.json()) as Partial<Transcript> & {
    segments?: { start: number; end: number; text: string }[];
    words?: { word: string; start: number; end: number }[];
  };
  return {
    language: answer.language ?? body.language ?? 'en',
    duration: answer.duration ?? 0,
    text: answer.text ?? '',
    segments: (answer.segments ?? []).map((s) => ({ start: s.start, end: s.end, text: s.text })),
    words: (answer.words ?? []).map((w) => ({ word: w.word, start: w.start, end: w.end })),
    engine: 'upstream',
  };
}

export async function createTranscription(ctx: Context<'createTranscription'>) {
  return run(ctx, 'transcribe');
}

export async function createTranslation(ctx: Context<'createTranslation'>) {
  return run(ctx, 'translate');
}

/**
 * A transcription or translation of audio by URL (`file` a URL, no upload), as a batch line asks it: the same path as
 * the single request, answering what its body would be (the JSON, or the text of a text format).
 */
export async function transcribeByUrl(services: Services, identity: Identity, task: Task, body: Record<string, unknown>): Promise<unknown> {
  const operationId = task === 'transcribe' ? 'createTranscription' : 'createTranslation';
  const answer = await run({ ...services, identity, body, uploads: {}, params: {}, query: {}, operationId } as unknown as Ctx, task);
  return answer.content.kind === 'json' ? answer.content.value : answer.content.kind === 'text' ? String(answer.content.value) : undefined;
}
