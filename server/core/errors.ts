// The one place that builds errors. Everything that refuses a request throws an ApiError made here; the HTTP layer
// (server/http/error-handler.ts) writes it as the envelope { error: { message, type, param, code } } and maps the
// validator's and the body parser's own errors onto the same constructors.

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
    /** Extra response headers, e.g. `Retry-After` or `x-should-retry`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get body(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** 404 is `not_found_error`, 5xx `server_error`, every other 4xx `invalid_request_error`. */
function typeFor(status: number): string {
  if (status === 404) return 'not_found_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export const apiError = (status: number, code: string | null, message: string, param: string | null = null) => new ApiError(status, code, message, param);

export const badRequest = (message: string, param: string | null = null, code = 'invalid_value') => apiError(400, code, message, param);

/** Absent and "belongs to another project" are the same answer, by design. */
export const notFound = (what: string, id: string, param: string | null = 'id') => apiError(404, 'not_found', `No ${what} with id '${id}' was found.`, param);

export const conflict = (message: string, code = 'conflict', param: string | null = null) => apiError(409, code, message, param);

export const forbidden = (message: string, code: string, param: string | null = null) => apiError(403, code, message, param);

/** A name (or other unique field) already taken in the project. The official clients retry a 409 unless told not to. */
export const taken = (message: string, code: string, param: string) =>
  new ApiError(409, code, message, param, 'invalid_request_error', { 'x-should-retry': 'false' });

/** An id a document gives for something new is taken already. */
export const idTaken = (what: string, id: string, param: string) => taken(`A ${what} with id '${id}' exists already.`, 'id_taken', param);

/**
 * Runs `fn` for the item at `at` of a document (`organizations.0.projects.1.videos.2`): its refusals (4xx) name the
 * item's field (`<at>.<field>`, or `<at>` for the item as a whole).
 */
export async function within<T>(at: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    const param = e.param === null ? at : `${at}.${e.param}`;
    throw new ApiError(e.status, e.code, e.message, param, e.type, e.headers);
  }
}

/** `noun` with its indefinite article, by its first letter ("an embedding", "a chat"): enough for the kinds, formats and machine names messages give. */
export function withArticle(noun: string, capital = false): string {
  const article = /^[aeiou]/i.test(noun) ? 'an' : 'a';
  return `${capital ? article.replace('a', 'A') : article} ${noun}`;
}

/**
 * A move a state machine's table does not allow. One shape for every machine: 409, `invalid_request_error`,
 * code `invalid_state_transition`, param null (the resource's state, not a request field, is what conflicts).
 */
export const invalidTransition = (what: string, from: string, event: string) =>
  new ApiError(
    409,
    'invalid_state_transition',
    `${withArticle(what, true)} in state ${from} cannot ${event.replace(/_/g, ' ')}.`,
    null,
    'invalid_request_error',
    {
      'x-should-retry': 'false',
    },
  );

/** A control character where none may be: it would be stored (or refused by PostgreSQL) as given. */
export const invalidCharacters = (param: string | null) =>
  badRequest(
    `${param ? `'${param}'` : 'The request'} contains a control character (such as NUL); only tab, newline and carriage return are allowed, and only inside body strings.`,
    param,
    'invalid_characters',
  );

// An absolute path in a tool's or the file system's text: after the start of a line, a space, a quote, a bracket, `=`
// or a comma, up to the next space, quote, bracket or colon (ffmpeg writes `<path>: <reason>`). A URL's path follows
// its host, so it stays.
const ABSOLUTE_PATH = /(^|[\s'"`([=,])\/[^\s'"`()[\]<>,;:]+/gm;

/**
 * Text a tool or the file system wrote (ffmpeg's stderr, an fs error's message: ENOENT, ENOTDIR... name the path),
 * made fit for a message: each path of `names` replaced by what the caller knows it as (the file name they sent, a
 * file id), then any other absolute path by `<server path>`. Messages name the caller's things, never the server's.
 */
export function withoutPaths(text: string, names: Record<string, string> = {}): string {
  let out = text;
  for (const [path, name] of Object.entries(names).sort(([a], [b]) => b.length - a.length)) out = out.split(path).join(name);
  return out.replace(ABSOLUTE_PATH, '$1<server path>');
}

export const internalError = () => new ApiError(500, 'internal_error', 'The server had an error while processing your request.');

/**
 * The database cannot be reached or written now (an outage): the request's transaction did not commit (save one
 * whose commit was under way when the connection was lost, which no database client can tell), and the same
 * request will work once it is back. The official clients retry a 503 after `Retry-After`.
 */
export const databaseUnavailable = () =>
  new ApiError(503, 'database_unavailable', 'The database is unavailable. Retry in a moment.', null, 'server_error', {
    'Retry-After': '1',
  });

/**
 * The server's disk cannot take or give the request's bytes now (full, read-only, a folder under DATA_DIR missing,
 * replaced or unwritable): nothing was kept.
 */
export const storageUnavailable = () =>
  new ApiError(
    503,
    'storage_unavailable',
    "The server's storage cannot take the request's data now; nothing was kept. Retry in a moment.",
    null,
    'server_error',
    {
      'Retry-After': '1',
    },
  );

/** A file system failure under DATA_DIR (its words, naming paths, only in the log): 503 `storage_unavailable`. */
export const storageFailure = (err: unknown): ApiError => Object.assign(storageUnavailable(), { cause: err });

/**
 * A stored resource whose bytes are no longer on disk while its storage is in place (deleted behind the server's
 * back): 410, as sending the request again cannot help; the record itself is still there.
 */
export const contentGone = (what: string, id: string, param: string | null = 'id') =>
  new ApiError(
    410,
    'content_gone',
    `The content of ${what} '${id}' is no longer stored on this server (its record remains): it cannot be read again.`,
    param,
    'invalid_request_error',
    { 'x-should-retry': 'false' },
  );

/**
 * Why the platform could not start, said in one line that names the setting to change (and never a password). The
 * entry points print it and exit non-zero; the stack is logged only at LOG_LEVEL=debug.
 */
export class StartError extends Error {
  constructor(
    message: string,
    readonly cause?: unknown,
  ) {
    super(message);
  }
}

/**
 * What an entry point prints when it cannot start: a StartError's line, with the stack only when `debug`; anything
 * else (a bug) with its stack.
 */
export function startFailure(err: unknown, debug: boolean): string {
  if (!(err instanceof StartError)) return `The platform could not start: ${(err as Error)?.message ?? err}\n${(err as Error)?.stack ?? ''}`.trimEnd();
  if (!debug) return err.message;
  return `${err.message}\n${(err.cause instanceof Error ? err.cause : err).stack}`;
}
