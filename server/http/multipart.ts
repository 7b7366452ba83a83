// Multipart bodies, for the operations whose request body is `multipart/form-data` only: parsed as a stream by
// busboy (pinned), the file part written to disk as it arrives (never held in memory whole), before the validator
// runs, so the text fields are validated against the spec like any body. The handler finds the file with
// `uploadOf(ctx.body)`; whatever it did not keep is removed once the response is finished, so a refused upload
// leaves nothing behind.
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { RequestHandler } from 'express';
import { apiError, badRequest } from '../core/errors.ts';

export interface Upload {
  /** Where the bytes are (absolute): the handler moves them where it keeps them. */
  path: string;
  bytes: number;
  /** The part's field name and the file name the client gave. */
  field: string;
  clientName: string;
}

const UPLOAD = Symbol('upload');

/** The file a multipart request carried (undefined when it carried none). */
export const uploadOf = (body: unknown): Upload | undefined => (body as { [UPLOAD]?: Upload } | undefined)?.[UPLOAD];

export interface MultipartOptions {
  /** Where parts are written while they arrive (a folder on the same disk as where they are kept). */
  incomingDir: string;
  maxFileBytes: number;
  /** Whether the request addresses an operation that takes multipart. */
  takesMultipart: (method: string, path: string) => boolean;
}

export function multipart(options: MultipartOptions): RequestHandler {
  return (req, res, next) => {
    if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? '') || !options.takesMultipart(req.method, req.path)) return next();
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 1, fields: 32, fieldSize: 64 * 1024, fileSize: options.maxFileBytes } });
    } catch (e) {
      return next(badRequest(`The multipart body cannot be read: ${(e as Error).message}.`, null, 'invalid_multipart'));
    }
    const fields: Record<string, unknown> = {};
    let upload: Upload | undefined;
    let writing: Promise<void> | undefined;
    let failure: unknown;
    const fail = (e: unknown) => {
      failure ??= e;
    };
    res.once('close', () => {
      if (upload) void rm(upload.path, { force: true });
    });
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (field, stream, info) => {
      if (upload) return void stream.resume();
      const path = join(options.incomingDir, randomUUID());
      upload = { path, bytes: 0, field, clientName: info.filename ?? '' };
      const u = upload;
      stream.on('limit', () => fail(apiError(413, 'file_too_large', `The file is larger than this server takes (${options.maxFileBytes} bytes).`, field)));
      writing = mkdir(options.incomingDir, { recursive: true })
        .then(() =>
          pipeline(
            stream,
            async function* (chunks: AsyncIterable<Buffer>) {
              for await (const chunk of chunks) {
                u.bytes += chunk.length;
                yield chunk;
              }
            },
            createWriteStream(path),
          ),
        )
        .catch(fail);
    });
    parser.on('filesLimit', () => fail(badRequest('Send one file per upload.', null, 'too_many_files')));
    parser.on('error', (e) => {
      fail(badRequest(`The multipart body cannot be read: ${(e as Error).message}.`, null, 'invalid_multipart'));
      req.unpipe(parser);
      req.resume();
      void finish();
    });
    let done = false;
    const finish = async () => {
      if (done) return;
      done = true;
      await writing;
      if (failure) {
        if (upload) await rm(upload.path, { force: true });
        return next(failure);
      }
      req.body = upload ? { ...fields, [upload.field]: '' } : fields;
      if (upload) Object.defineProperty(req.body, UPLOAD, { value: upload, enumerable: false });
      next();
    };
    parser.on('close', () => void finish());
    req.pipe(parser);
  };
}
