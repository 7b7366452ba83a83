// The one place that builds errors. Handlers throw `apiError(...)` (or a shortcut); the error middleware turns
// anything thrown, including the validator's and the body parser's errors, into the envelope
// { error: { message, type, param, code } }. Unexpected exceptions become a generic 500 whose cause is logged.
import type { ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
    readonly param: string | null = null,
    readonly type: string = typeFor(status),
    /** Extra response headers, e.g. `Retry-After` or `Allow`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get body(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

function typeFor(status: number): string {
  if (status === 404) return 'not_found_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export const apiError = (status: number, code: string | null, message: string, param: string | null = null) =>
  new ApiError(status, code, message, param);

export const badRequest = (message: string, param: string | null = null, code = 'invalid_value') =>
  apiError(400, code, message, param);

/** Absent and "belongs to another project" are the same answer, by design. */
export const notFound = (what: string, id: string, param: string | null = 'id') =>
  apiError(404, 'not_found', `No ${what} with id '${id}' was found.`, param);

export const conflict = (message: string, code = 'conflict', param: string | null = null) => apiError(409, code, message, param);

export const forbidden = (message: string, code: string, param: string | null = null) => apiError(403, code, message, param);

const LOCATIONS = new Set(['body', 'query', 'params', 'path', 'headers']);

/** Maps express-openapi-validator and body-parser errors (and anything else) onto ApiError. */
export function toApiError(err: any): ApiError {
  if (err instanceof ApiError) return err;
  const status: number = Number(err?.status ?? err?.statusCode) || 500;
  if (status >= 500) return new ApiError(500, 'internal_error', 'The server had an error while processing your request.');

  if (err?.type === 'entity.parse.failed') return badRequest('The request body is not valid JSON.', null, 'invalid_json');
  if (err?.type === 'entity.too.large' || status === 413) {
    return apiError(413, 'body_too_large', 'The request body is larger than this server accepts.');
  }
  if (err?.type === 'encoding.unsupported' || err?.type === 'charset.unsupported') {
    return apiError(415, 'unsupported_media_type', String(err.message));
  }
  if (status === 404) return apiError(404, 'not_found', `No route ${err?.path ?? ''} exists.`.replace('  ', ' '), null);
  if (status === 405) return apiError(405, 'method_not_allowed', 'This route does not accept that HTTP method.');
  if (status === 415) return apiError(415, 'unsupported_media_type', 'The request body must be application/json.');

  // Validator errors: the first error's path names where (/body/media/frame_images/0/frame) and its keyword why.
  const first = Array.isArray(err?.errors) ? err.errors[0] : undefined;
  const [where, ...rest] = String(first?.path ?? '').split('/').filter(Boolean);
  const param = where && LOCATIONS.has(where) && rest.length ? rest.join('.') : null;
  let code = String(first?.errorCode ?? '').replace(/\.openapi\.\w+$/, '') || 'invalid_request';
  let message: string = String(first?.message ?? err?.message ?? 'Invalid request.');
  if (/^Unknown query parameter/i.test(message)) code = 'unknown_parameter';
  if (param && message.startsWith('must')) message = `'${param}' ${message}`;
  return badRequest(message.endsWith('.') ? message : `${message}.`, param, code);
}

export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const apiErr = toApiError(err);
    if (apiErr.status >= 500) {
      // Only here does the cause leave the process, and only into the log, under the request id.
      log.error({ err, requestId: res.getHeader('x-request-id'), method: req.method, path: req.path }, 'unhandled error');
    }
    if (res.headersSent) return void res.end();
    res.set(apiErr.headers).status(apiErr.status).json(apiErr.body);
  };
}
