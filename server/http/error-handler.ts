// The pipeline's last step: whatever was thrown on the way (an ApiError, the validator's or the body parser's
// errors, or anything unexpected) is written as the envelope. An outage (the database unreachable or unwritable,
// the disk full or read-only) is a 503 with Retry-After: the request changed nothing and can simply be sent again.
// Other unexpected exceptions become a generic 500 whose cause is logged under the request id, and only there.
import type { ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import { ApiError, apiError, badRequest, databaseUnavailable, internalError, storageUnavailable } from '../core/errors.ts';
import { isDatabaseOutage } from '../db/outage.ts';

const LOCATIONS = new Set(['body', 'query', 'params', 'path', 'headers']);
/** File system errors that say the disk cannot take data now (full, over quota, read-only, out of descriptors, failing). */
const STORAGE_CODES = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EMFILE', 'ENFILE', 'EIO']);
/**
 * File system errors of a path the server keeps (a folder under DATA_DIR removed, replaced by a file, made
 * unwritable, or bytes deleted behind its back): the storage's failure, never the caller's (a spawned program that
 * is missing, `spawn ...` ENOENT, is not one).
 */
const PATH_CODES = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'EACCES', 'EPERM', 'EEXIST', 'ELOOP', 'ENOTEMPTY', 'EBUSY', 'EXDEV']);
// biome-ignore lint/suspicious/noExplicitAny: anything can be thrown; its fields are probed.
const isStorageFailure = (err: any) =>
  err?.syscall !== undefined &&
  (STORAGE_CODES.has(err?.code) || (PATH_CODES.has(err?.code) && typeof err?.path === 'string' && !String(err.syscall).startsWith('spawn')));

/** Maps express-openapi-validator and body-parser errors (and anything else) onto ApiError. */
// biome-ignore lint/suspicious/noExplicitAny: anything can be thrown; its fields are probed below.
export function toApiError(err: any): ApiError {
  if (err instanceof ApiError) return err;
  if (isDatabaseOutage(err)) return databaseUnavailable();
  if (isStorageFailure(err)) return storageUnavailable();
  const status: number = Number(err?.status ?? err?.statusCode) || 500;
  // A system error (a file's bytes missing when sent: ENOENT with a 404 status) is the server's failure, and its
  // fields name server paths.
  if (status >= 500 || err?.syscall !== undefined) return internalError();

  if (err?.type === 'entity.parse.failed') return badRequest('The request body is not valid JSON.', null, 'invalid_json');
  if (err?.type === 'entity.too.large' || status === 413) return apiError(413, 'body_too_large', 'The request body is larger than this server accepts.');
  if (err?.type === 'encoding.unsupported' || err?.type === 'charset.unsupported') return apiError(415, 'unsupported_media_type', String(err.message));
  if (status === 404) return apiError(404, 'not_found', `No route ${err?.path ?? ''} exists.`.replace('  ', ' '), null);
  if (status === 405) return apiError(405, 'method_not_allowed', 'This route does not accept that HTTP method.');
  if (status === 415)
    return apiError(
      415,
      'unsupported_media_type',
      "The request body's media type is not one this operation takes (application/json, unless its contract says otherwise).",
    );
  if (status === 416) return apiError(416, 'range_not_satisfiable', 'The requested range lies outside the file.');

  // Validator errors: the first error's path names where (/body/media/frame_images/0/frame) and its keyword why.
  const first = Array.isArray(err?.errors) ? err.errors[0] : undefined;
  const [where, ...rest] = String(first?.path ?? '')
    .split('/')
    .filter(Boolean);
  const param = where && LOCATIONS.has(where) && rest.length ? rest.join('.') : null;
  let code = String(first?.errorCode ?? '').replace(/\.openapi\.\w+$/, '') || 'invalid_request';
  let message: string = String(first?.message ?? err?.message ?? 'Invalid request.');
  if (/^Unknown query parameter/i.test(message)) code = 'unknown_parameter';
  if (param && message.startsWith('must')) message = `'${param}' ${message}`;
  return badRequest(message.endsWith('.') ? message : `${message}.`, param, code);
}

/**
 * Logs a failure answered with `apiErr` by what it is: an unexpected exception, or a 500 the server built, is an
 * error, with its stack; a 502-504 the server answers on purpose (an endpoint not ready, a model at capacity, an
 * upstream that failed or timed out) is routine: a warning, without a stack. An outage's 503 is a warning naming
 * its cause in one line (an outage fails every request: a stack each would flood the log). 4xx are the caller's
 * and not logged.
 */
export function logFailure(log: Logger, err: unknown, apiErr: ApiError, fields: Record<string, unknown>, msg: string): void {
  if (apiErr.status < 500) return;
  // The outage's own words (the driver's, the file system's), on one line.
  const cause = (err instanceof ApiError ? err.cause : err) as { code?: unknown; message?: unknown } | undefined;
  if (apiErr.status === 503 && cause !== undefined) {
    const words = String(cause?.message ?? cause)
      .trim()
      .split('\n')
      .at(-1);
    log.warn({ ...fields, status: 503, code: apiErr.code, cause: `${cause?.code ?? ''} ${words}`.trim() }, msg);
  } else if (err instanceof ApiError && apiErr.status !== 500) log.warn({ ...fields, status: apiErr.status, code: apiErr.code, message: apiErr.message }, msg);
  else log.error({ ...fields, err }, msg);
}

export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const apiErr = toApiError(err);
    logFailure(log, err, apiErr, { requestId: res.getHeader('x-request-id'), method: req.method, path: req.path }, 'request failed');
    if (res.headersSent) return void res.end();
    // The envelope is JSON whatever the handler had set before it failed (e.g. a file's type).
    res.set(apiErr.headers).type('application/json').status(apiErr.status).json(apiErr.body);
  };
}
