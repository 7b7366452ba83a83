// Module `audio`: the rules of a transcription or translation request: which model, which audio, which limits.
import { createWriteStream } from 'node:fs';
import type { UrlFetchPolicy } from '../../core/config.ts';
import { apiError, badRequest, storageFailure, withArticle } from '../../core/errors.ts';
import type { Db } from '../../db/index.ts';
import { downloadUserUrl } from '../../engines/user-urls.ts';
import { capabilities, findModel } from '../models/index.ts';

/** The platform's default model when `model` is absent. */
export const DEFAULT_MODEL = 'openai/whisper-large-v3';
/** Audio longer than this is refused (the platform's cap). */
export const MAX_SECONDS = 4 * 3600;

const mb = (bytes: number) => (bytes >= 1024 ** 3 ? `${Math.round((bytes / 1024 ** 3) * 10) / 10} GB` : `${Math.round(bytes / 1024 / 1024)} MB`);

/** The 413 of a binary upload over the limit: send a URL instead. */
export const uploadTooLarge = (limit: number, urlLimit: number) =>
  apiError(
    413,
    'file_too_large',
    `The audio file is over the ${mb(limit)} limit of a binary upload. Send the audio's public http(s) URL in 'file' instead (up to ${mb(urlLimit)}).`,
    'file',
  );

/** The catalogue model that serves the task: 404 when unknown, 400 when it does not transcribe (or translate). */
export async function transcriptionModel(db: Db, projectId: string, id: string, task: 'transcribe' | 'translate') {
  const model = await findModel(db, projectId, id);
  if (!model) throw apiError(404, 'model_not_found', `The model '${id}' does not exist or is not available to this project.`, 'model');
  const needed = task === 'transcribe' ? 'transcription' : 'translation';
  if (!capabilities(model).includes(needed)) {
    throw badRequest(
      `'${id}' is ${withArticle(model.type)} model that does not ${task === 'transcribe' ? 'transcribe' : 'translate'} audio; use a model such as ${DEFAULT_MODEL}.`,
      'model',
      'model_not_available',
    );
  }
  return model;
}

/** `file` sent as text must be an http(s) URL. */
export function audioUrl(value: unknown): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw badRequest("'file' must be the audio as a file part, or its public http(s) URL.", 'file', 'invalid_value');
  }
  return url;
}

/**
 * Fetches audio by URL into `path`, as a stream, under `policy` (a public address only, checked on every redirect
 * before connecting; short connect and total time-outs: engines/user-urls.ts): refused when its `Content-Length` is
 * over `limit`, and stopped as soon as more than `limit` bytes have arrived, so nothing larger is ever held.
 */
export async function downloadAudio(url: URL, path: string, limit: number, policy: UrlFetchPolicy): Promise<number> {
  const out = createWriteStream(path);
  // The temporary file failing (DATA_DIR/tmp removed or replaced meanwhile) is the storage's failure: 503, not a
  // crash for want of a listener, nor a write waiting forever for a 'drain' that never comes.
  let broken: unknown;
  const drained = () =>
    new Promise<void>((r) => {
      const done = () => {
        out.off('drain', done);
        out.off('error', done);
        r();
      };
      out.on('drain', done);
      out.on('error', done);
    });
  out.on('error', (err) => (broken ??= err));
  try {
    const bytes = await downloadUserUrl(
      url,
      policy,
      limit,
      {
        tooLarge: () => badRequest(`The audio at ${url.href} is over the ${mb(limit)} limit of audio by URL.`, 'file', 'file_too_large'),
        unreachable: (why) => badRequest(`The audio at ${url.href} cannot be fetched: ${why}.`, 'file', 'file_unreachable'),
      },
      async (chunk) => {
        if (broken) throw storageFailure(broken);
        if (!out.write(chunk)) await drained();
      },
    );
    await new Promise<void>((r) => out.end(() => r()));
    if (broken) throw storageFailure(broken);
    return bytes;
  } finally {
    // Closed before the caller removes the file (its opening may still be under way when the fetch failed at once).
    if (!out.closed)
      await new Promise<void>((r) => {
        out.once('close', () => r());
        if (!out.writableEnded) out.end();
      });
  }
}
