// A body that is the file itself (an upload rule with `raw`: the signed upload's PUT), read after validation and
// after the operation's signature check, so nothing of it is stored for a request that is refused. Written to a
// temporary file as it arrives, its byte limit enforced while it streams (and from `Content-Length` before), never
// held in memory; the temporary file is removed once the response is finished.
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Request, Response } from 'express';
import type { Config } from '../core/config.ts';
import { ApiError, badRequest } from '../core/errors.ts';
import { storageFailure, temporaryFile, type Upload, type UploadRule } from './multipart.ts';

export async function receiveBody<C>(req: Request, res: Response, rule: UploadRule<C>, config: Config): Promise<Upload> {
  const maxBytes = rule.maxBytes(config);
  const length = Number(req.headers['content-length']);
  const refuse = (err: ApiError) => {
    // The rest of the body is read and discarded, so the client (still sending) sees the answer.
    req.resume();
    return err;
  };
  if (Number.isFinite(length) && length > maxBytes) throw refuse(rule.tooLarge(config));
  let path: string;
  try {
    path = temporaryFile(join(config.dataDir, 'tmp'));
  } catch (err) {
    throw refuse(err as ApiError);
  }
  // A cleanup that fails (say, DATA_DIR/tmp made a file) must not bring the process down.
  res.once('close', () => rm(path, { force: true }).catch(() => {}));
  const upload: Upload = { path, filename: rule.field, mimeType: req.headers['content-type'] ?? 'application/octet-stream', bytes: 0 };
  // Leaving the loop early (over the limit) must not destroy the request: its answer still has to be sent.
  const chunks = req.iterator({ destroyOnReturn: false });
  const out = createWriteStream(path);
  try {
    await pipeline(async function* () {
      for await (const chunk of chunks as AsyncIterable<Buffer>) {
        upload.bytes += chunk.length;
        if (upload.bytes > maxBytes) throw rule.tooLarge(config);
        yield chunk;
      }
    }, out);
  } catch (err) {
    // The file may still be opening: once it is closed, the cleanup at the response's end finds it.
    if (!out.closed) await once(out, 'close');
    if (err instanceof ApiError) throw refuse(err);
    if (!req.complete && !out.errored) throw refuse(badRequest('The request ended before its body did.', null, 'incomplete_body'));
    throw refuse(storageFailure(err));
  }
  return upload;
}
