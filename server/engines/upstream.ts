// Calls to an upstream OpenAI-compatible server (a route of engines/routes.ts): the route's base URL and key, a
// time limit, and the upstream's failures turned into this platform's errors. A 4xx from the upstream is the
// caller's request refused there: it is passed on with the upstream's message. Anything else (unreachable, 5xx, a
// timeout) is the upstream's failure: 502, or 504 for a timeout, saying so. An evaluation's external server is the
// caller's, not the operator's: it is fetched through user-urls.ts, and nothing of its answers but the status is
// copied into a message.
import { STATUS_CODES } from 'node:http';
import type { UrlFetchPolicy } from '../core/config.ts';
import { ApiError } from '../core/errors.ts';
import type { UpstreamRoute } from './routes.ts';
import { fetchUserUrl, UserUrlError } from './user-urls.ts';

export const UPSTREAM_TIMEOUT_MS = 120_000;

export interface UpstreamOptions {
  signal?: AbortSignal;
  /** GET (no body) instead of POST: reads of an upstream's resources (an RL operation polled until it ends). */
  method?: 'GET';
  /** The route is a caller's server (an external judge), fetched under this policy. */
  external?: UrlFetchPolicy;
}

/** POSTs `body` (JSON, or FormData for uploads) to `<route.url><path>` (or GETs it); answers the response once its status is OK. */
export async function upstreamFetch(route: UpstreamRoute, path: string, body: unknown, options: UpstreamOptions = {}): Promise<Response> {
  if (options.external) return externalFetch(route, path, body, options.external);
  const { signal } = options;
  const limit = route.timeoutMs ?? UPSTREAM_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(limit);
  const form = body instanceof FormData;
  let res: Response;
  try {
    const get = options.method === 'GET';
    res = await fetch(`${route.url}${path}`, {
      method: get ? 'GET' : 'POST',
      headers: {
        ...(route.apiKey ? { Authorization: `Bearer ${route.apiKey}` } : {}),
        ...(form || get ? {} : { 'Content-Type': 'application/json' }),
        Accept: 'application/json, text/event-stream',
      },
      body: get ? undefined : form ? body : JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (err) {
    if (timeout.aborted)
      throw new ApiError(504, 'upstream_timeout', `The upstream engine at ${route.url} did not answer within ${limit / 1000} s.`, null, 'server_error');
    throw new ApiError(
      502,
      'upstream_unreachable',
      `The upstream engine at ${route.url} could not be reached (${(err as Error).message}).`,
      null,
      'server_error',
    );
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => '');
  let message = text.slice(0, 500);
  let param: string | null = null;
  try {
    const parsed = JSON.parse(text);
    message = parsed?.error?.message ?? parsed?.message ?? message;
    param = parsed?.error?.param ?? null;
  } catch {
    // not JSON: the text itself
  }
  if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 403 && res.status !== 429) {
    throw new ApiError(res.status, 'upstream_refused', `The upstream engine refused the request: ${message || res.statusText}`, param);
  }
  throw new UpstreamFailure(route.url, res.status, message || res.statusText, res.headers.get('retry-after'));
}

/** A status as messages show it: `404 (Not Found)`. */
const statusText = (status: number) => `${status} (${STATUS_CODES[status] ?? 'unknown status'})`;

/**
 * The same call to a caller's server: its URL is `route.url`'s path followed by `path` (a query or fragment of the
 * base URL cannot choose another path), and a failure says only what happened: a refusal (a UserUrlError, which
 * the evaluation treats as the caller's), a time-out (504), no connection (502) or the status it answered.
 */
async function externalFetch(route: UpstreamRoute, path: string, body: unknown, policy: UrlFetchPolicy): Promise<Response> {
  const url = new URL(route.url);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  url.search = '';
  url.hash = '';
  const who = `The external server at ${route.url}`;
  let res: Awaited<ReturnType<typeof fetchUserUrl>>;
  try {
    res = await fetchUserUrl(
      url,
      {
        method: 'POST',
        headers: { ...(route.apiKey ? { Authorization: `Bearer ${route.apiKey}` } : {}), 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(body),
      },
      policy,
    );
  } catch (err) {
    if (!(err instanceof UserUrlError)) throw err;
    if (err.kind === 'refused') throw new UserUrlError('refused', `${who} cannot be called: ${err.message}.`);
    if (err.kind === 'timeout' || err.kind === 'connect_timeout') throw new ApiError(504, 'upstream_timeout', `${who}: ${err.message}.`, null, 'server_error');
    throw new ApiError(502, 'upstream_unreachable', `${who} could not be reached.`, null, 'server_error');
  }
  // undici's Response is the Fetch API's, as the global one.
  if (res.ok) return res as unknown as Response;
  // Its body is not read: nothing of it is copied anywhere.
  await res.body?.cancel().catch(() => {});
  if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 403 && res.status !== 429) {
    throw new ApiError(res.status, 'upstream_refused', `${who} refused the request: it answered ${statusText(res.status)}.`);
  }
  throw new UpstreamFailure(route.url, res.status, '', res.headers.get('retry-after'), 'external server');
}

/** The upstream's own failure (a 5xx, a 401, 403 or 429), as this platform's 502, keeping what a caller that retries needs. */
export class UpstreamFailure extends ApiError {
  constructor(
    readonly url: string,
    /** The upstream's status. */
    readonly upstreamStatus: number,
    /** The upstream's message (empty for an external server, whose text is never copied). */
    readonly upstreamMessage: string,
    /** The upstream's `Retry-After` header, as sent. */
    readonly retryAfter: string | null,
    who = 'upstream engine',
  ) {
    super(
      502,
      'upstream_failed',
      `The ${who} at ${url} answered ${upstreamMessage ? `${upstreamStatus}: ${upstreamMessage}` : `${statusText(upstreamStatus)}.`}`,
      null,
      'server_error',
    );
  }
}

/** The events of an upstream `text/event-stream` response: each `data:` payload parsed, up to `[DONE]`. */
export async function* upstreamEvents(res: Response): AsyncGenerator<unknown> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.search(/\r?\n\r?\n/); end >= 0; end = buffer.search(/\r?\n\r?\n/)) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (!data) continue;
      if (data === '[DONE]') return;
      yield JSON.parse(data);
    }
  }
}
