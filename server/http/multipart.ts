// Multipart bodies of the operations that take an upload (a module's `uploads` rules), parsed before validation
// so the contract still checks every text field. The body is read as a stream (busboy): text fields go to
// `req.body` (`name[]`, or a repeated name, makes an array), the one file part is written to a temporary file as
// it arrives, with its byte limit enforced while it streams, and never held in memory. The file's field gets its
// file name as a placeholder string (the contract's `format: binary`), and the handler finds the file in
// `ctx.uploads`. The temporary file is removed once the response is finished.
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { Request, RequestHandler } from 'express';
import { type OperationId, operations } from '../../generated/operations.ts';
import type { Config } from '../core/config.ts';
import { type ApiError, apiError, badRequest, storageFailure } from '../core/errors.ts';
import { refResolver, type SpecDocument as Spec } from './spec-ref.ts';

export interface Upload {
  /** The temporary file holding the bytes; removed when the response is finished. */
  path: string;
  filename: string;
  mimeType: string;
  bytes: number;
}

export interface UploadRule<Ctx = never> {
  /** The field whose file part is the upload (for a `raw` rule: the name the handler finds the body under). */
  field: string;
  /** The whole body is the file (any media type the operation takes), read by raw-body.ts, not a multipart form. */
  raw?: boolean;
  /**
   * Checks the text fields sent before the file (e.g. `model`) when the file part begins, before any of its bytes
   * are stored: a refusal discards the upload as it arrives.
   */
  beforeFile?: (ctx: Ctx, fields: Record<string, unknown>) => Promise<void>;
  maxBytes: (config: Config) => number;
  /** The 413 for a file over `maxBytes`. */
  tooLarge: (config: Config) => ApiError;
}

/**
 * A new temporary file's path in `tmpDir`, the folder made first (again, if it was removed while the server runs).
 * A folder that cannot be made (a file in its place, a read-only disk) is the storage's failure: 503, the cause
 * kept for the log.
 */
export function temporaryFile(tmpDir: string, prefix = 'upload'): string {
  try {
    mkdirSync(tmpDir, { recursive: true });
  } catch (err) {
    throw storageFailure(err);
  }
  return join(tmpDir, `${prefix}-${randomUUID()}`);
}

/** Writing an upload to disk failed: 503 `storage_unavailable` (the file system's words, naming paths, only in the log). */
export { storageFailure };

/** Largest text field, in bytes. */
const FIELD_LIMIT = 1024 * 1024;
const MULTIPART = /^multipart\/form-data\b/i;

/** The scalar type (number, integer, boolean) of each field of an operation's multipart schema, by name. */
function scalarFields(spec: Spec, operationId: OperationId): Map<string, string> {
  const resolve = refResolver(spec);
  const { path, method } = operations[operationId];
  const schema = resolve(resolve(spec.paths[path]?.[method]?.requestBody)?.content?.['multipart/form-data']?.schema);
  const out = new Map<string, string>();
  // biome-ignore lint/suspicious/noExplicitAny: a property of the contract can be any JSON Schema.
  for (const [name, prop] of Object.entries<any>(schema?.properties ?? {})) {
    const type = resolve(prop)?.type;
    if (type === 'number' || type === 'integer' || type === 'boolean') out.set(name, type);
  }
  return out;
}

/** Multipart text is text: a number or boolean field's value becomes one when it reads as one (else the contract refuses it). */
function coerce(value: string, type: string | undefined): unknown {
  if ((type === 'number' || type === 'integer') && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(value.trim())) return Number(value);
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

export function multipartBodies<Ctx>(
  rules: Partial<Record<OperationId, UploadRule<Ctx>>>,
  matchOperation: (method: string, path: string) => OperationId | undefined,
  config: Config,
  spec: Spec,
  /** What `beforeFile` is given for a request (the services and the caller). */
  contextFor: (req: Request) => Ctx,
): RequestHandler {
  const tmpDir = join(config.dataDir, 'tmp');
  const scalars = new Map(Object.keys(rules).map((op) => [op, scalarFields(spec, op as OperationId)]));
  // Only a request to an upload operation's path can be one: the full match (which of several operations a path
  // means) is made for those alone, not for every request.
  const candidates = Object.keys(rules).map((op) => {
    const { method, path } = operations[op as OperationId];
    return { method: method.toUpperCase(), pattern: new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}/?$`) };
  });
  return (req, res, next) => {
    if (!candidates.some((c) => c.method === req.method && c.pattern.test(req.path))) return next();
    const op = matchOperation(req.method, req.path);
    const found = op && rules[op];
    if (!found) return next();
    if (!MULTIPART.test(req.headers['content-type'] ?? '')) {
      return next(apiError(415, 'unsupported_media_type', `The request body must be multipart/form-data (with '${found.field}' a file part or a URL).`));
    }
    const beforeFile = found.beforeFile;
    const rule: Rule = {
      field: found.field,
      maxBytes: found.maxBytes(config),
      tooLarge: () => found.tooLarge(config),
      scalars: scalars.get(op)!,
      beforeFile: beforeFile && ((fields) => beforeFile(contextFor(req), fields)),
    };
    // A declared length already over the limit (with room for the text fields) is refused before anything is read.
    const length = Number(req.headers['content-length']);
    if (Number.isFinite(length) && length > rule.maxBytes + FIELD_LIMIT) return next(rule.tooLarge());
    parse(req, rule, tmpDir, res.once.bind(res)).then(
      ({ body, uploads }) => {
        req.body = body;
        (req as Request & { uploads?: Record<string, Upload> }).uploads = uploads;
        next();
      },
      (err) => {
        // The rest of the body is read and discarded, so the client (still sending) sees the answer.
        req.resume();
        next(err);
      },
    );
  };
}

interface Rule {
  field: string;
  maxBytes: number;
  tooLarge: () => ApiError;
  scalars: Map<string, string>;
  beforeFile?: (fields: Record<string, unknown>) => Promise<void>;
}

function parse(req: Request, rule: Rule, tmpDir: string, onResponseEnd: (event: 'close', f: () => void) => unknown) {
  return new Promise<{ body: Record<string, unknown>; uploads: Record<string, Upload> }>((resolve, reject) => {
    const body: Record<string, unknown> = {};
    // The text fields so far are the request's body even when the parse is refused (a 413's rate-limit headers are
    // those of the `model` sent before the file).
    req.body = body;
    const uploads: Record<string, Upload> = {};
    const writes: Promise<void>[] = [];
    // An ApiError (writing the upload to disk failing among them: 503, the cause logged with its path).
    let failure: unknown;
    const fail = (e: unknown) => (failure ??= e);
    let bb: busboy.Busboy;
    try {
      // busboy's `limit` fires when a file reaches `fileSize`: one byte more than the limit, so a file of exactly
      // `maxBytes` is taken.
      bb = busboy({ headers: req.headers, limits: { fileSize: rule.maxBytes + 1, fieldSize: FIELD_LIMIT, files: 1, fields: 100, parts: 101 } });
    } catch (err) {
      return reject(badRequest(`The multipart body cannot be read: ${(err as Error).message}.`, null, 'invalid_multipart'));
    }
    const put = (name: string, text: string) => {
      const key = name.endsWith('[]') ? name.slice(0, -2) : name;
      const value = coerce(text, rule.scalars.get(key));
      const prev = body[key];
      if (name.endsWith('[]')) body[key] = [...(Array.isArray(prev) ? prev : prev === undefined ? [] : [prev]), value];
      else body[key] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
    };
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(apiError(413, 'body_too_large', `The field '${name}' is over ${FIELD_LIMIT} bytes.`, name));
      put(name, value);
    });
    bb.on('file', (name, stream, info) => {
      if (name !== rule.field || uploads[name]) {
        stream.resume();
        fail(badRequest(uploads[name] ? `Send one '${name}' only.` : `'${name}' must be a text field, not a file.`, name, 'invalid_value'));
        return;
      }
      if (rule.beforeFile) {
        // Nothing of the file is stored until the fields before it pass (busboy holds the body meanwhile). A refusal
        // discards the file's bytes as they arrive and answers when the body ends, so the client, still sending,
        // reads the answer rather than a closed connection.
        stream.pause();
        rule.beforeFile({ ...body }).then(
          () => store(name, stream, info),
          (err) => {
            fail(err);
            stream.resume();
          },
        );
      } else store(name, stream, info);
    });
    const store = (name: string, stream: Readable & { truncated?: boolean }, info: busboy.FileInfo) => {
      // Answered at once: the rest of the body is discarded as it arrives (the caller's error handler resumes it).
      const tooLarge = () => {
        req.unpipe(bb);
        reject(rule.tooLarge());
      };
      // While `beforeFile` ran, busboy went on filling the paused part's buffer: a limit smaller than that buffer may
      // already have been passed, its `limit` event gone before any listener (busboy marks the stream `truncated`).
      if (stream.truncated) {
        stream.resume();
        return tooLarge();
      }
      let path: string;
      try {
        path = temporaryFile(tmpDir);
      } catch (err) {
        // Refused; the part's bytes are read and dropped, so the parse goes on to the end of the body and answers.
        fail(err);
        stream.resume();
        return;
      }
      // A cleanup that fails (say, DATA_DIR/tmp made a file) must not bring the process down.
      onResponseEnd('close', () => rm(path, { force: true }).catch(() => {}));
      const upload: Upload = { path, filename: info.filename || 'upload', mimeType: info.mimeType, bytes: 0 };
      uploads[name] = upload;
      put(name, upload.filename);
      const out = createWriteStream(path);
      stream.on('data', (chunk: Buffer) => (upload.bytes += chunk.length));
      stream.on('limit', () => {
        stream.unpipe(out);
        req.unpipe(bb);
        // Known at once (the parse must not end well meanwhile); answered once the file is closed (it may still be
        // opening), so that the cleanup at the response's end finds it.
        fail(rule.tooLarge());
        out.end();
        out.once('close', tooLarge);
      });
      // A write that fails (the folder removed meanwhile, the disk full) must not stop the part being read: piped
      // into a destroyed file it would never end, and neither would the request.
      out.on('error', () => {
        stream.unpipe(out);
        stream.resume();
      });
      stream.pipe(out);
      writes.push(
        // Settled once the file is closed: the handler reads it whole, and a refusal's cleanup finds it.
        new Promise<void>((done, broke) => {
          out.on('close', done);
          out.on('error', broke);
        }).catch((err) => void fail(storageFailure(err))),
      );
    };
    bb.on('filesLimit', () => fail(badRequest(`Send one '${rule.field}' only.`, rule.field, 'invalid_value')));
    bb.on('fieldsLimit', () => fail(badRequest('The multipart body has too many fields.', null, 'invalid_multipart')));
    bb.on('error', (err: Error) => reject(failure ?? badRequest(`The multipart body cannot be read: ${err.message}.`, null, 'invalid_multipart')));
    bb.on('close', () => {
      Promise.all(writes).then(() => (failure ? reject(failure) : resolve({ body, uploads })), reject);
    });
    // A client that goes away mid-body ends the parse (the temporary file goes with the response).
    req.once('close', () => {
      if (!req.complete) reject(badRequest('The request ended before its multipart body did.', null, 'invalid_multipart'));
    });
    req.pipe(bb);
  });
}
