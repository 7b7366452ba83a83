// The typed client: openapi-fetch over the generated `paths`, each method with a timeout per attempt, the caller's
// AbortSignal and retries (transport.ts), and beside them `stream` (server-sent events, events.ts), `paginate`
// (cursor-paged lists) and `upload` (streamed multipart, upload.ts). index.ts is what the package exports.

import type { Client, ClientOptions, FetchResponse, MaybeOptionalInit } from 'openapi-fetch';
import createClient, { mergeHeaders } from 'openapi-fetch';
import type { paths } from './api.js';
import { PlatformError } from './errors.js';
import { EventStream } from './events.js';
import { send, type Transport, type TransportOptions, transport } from './transport.js';
import { type FileSource, multipartBody } from './upload.js';

/** Options of one call, beside openapi-fetch's: the client's `timeout` and `retry` for this call only. */
export interface CallOptions {
  timeout?: number;
  retry?: TransportOptions['retry'];
  signal?: AbortSignal;
}

type Method = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';
type Operation<P extends keyof paths, M extends Method> = paths[P] extends { [K in M]: infer O } ? O : never;
type Init<P extends keyof paths, M extends Method> = MaybeOptionalInit<paths[P], M>;
/** The init argument: required when the operation has required parameters or a required body. */
type InitArgs<I> = undefined extends I ? [init?: NonNullable<I> & CallOptions] : [init: I & CallOptions];

type JsonOk<O> = O extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
type EventsOk<O> = O extends { responses: { 200: { content: { 'text/event-stream': infer E } } } } ? E : never;
type JsonBody<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type FormBody<O> = O extends { requestBody?: { content: { 'multipart/form-data': infer B } } } ? B : never;

/** The paths whose GET answers a page with a cursor to the next (`next_cursor`, or `next_page_token`). */
export type PagedPath = {
  [P in keyof paths]: [JsonOk<Operation<P, 'get'>>] extends [never]
    ? never
    : JsonOk<Operation<P, 'get'>> extends { next_cursor: string } | { next_page_token: string }
      ? P
      : never;
}[keyof paths];
/** One page of a paged list, as the answer reads (openapi-fetch's reading of the generated type: no write-only fields). */
export type Page<P extends PagedPath> = NonNullable<
  FetchResponse<Operation<P, 'get'> & Record<string | number, unknown>, Record<string, never>, 'application/json'>['data']
>;
/** An item of a paged list: the element of the page's list field (`data`, `remediations`, ...). */
export type PageItem<P extends PagedPath> = {
  [K in keyof Page<P>]-?: NonNullable<Page<P>[K]> extends readonly (infer I)[] ? I : never;
}[keyof Page<P>];

/** The paths whose POST answers server-sent events (with `stream: true`): chat, completions, speech. */
export type StreamPath = { [P in keyof paths]: [EventsOk<Operation<P, 'post'>>] extends [never] ? never : P }[keyof paths];
/** One event of a stream: its `data:` JSON (the closing `[DONE]` is not an event). */
export type StreamEvent<P extends StreamPath> =
  EventsOk<Operation<P, 'post'>> extends infer E ? (E extends { data: infer D } ? (D extends '[DONE]' ? never : D) : E) : never;
/** The request body of a streaming operation (`stream` is set by the client). */
export type StreamBody<P extends StreamPath> = Omit<JsonBody<Operation<P, 'post'>>, 'stream'>;

/** The paths whose POST takes a multipart upload: files, transcriptions, translations. */
export type UploadPath = { [P in keyof paths]: [FormBody<Operation<P, 'post'>>] extends [never] ? never : P }[keyof paths];
/** A form with each file field (a Blob in the contract) taking a FileSource, besides what else it takes (such as a URL). */
type WithFileSources<B> = { [K in keyof B]: Blob extends B[K] ? Exclude<B[K], Blob> | FileSource : B[K] };
/**
 * An upload's form: its text fields as the contract types them, its file fields FileSources. Every field is optional
 * here: the generated types make a field with a default required, which a form need not send (the server checks it).
 */
export type UploadForm<P extends UploadPath> = Partial<WithFileSources<FormBody<Operation<P, 'post'>>>>;

export interface PlatformClientOptions extends Omit<ClientOptions, 'baseUrl' | 'fetch'>, TransportOptions {
  /** The server's root address, e.g. `http://127.0.0.1:8080` (paths carry their `/v1` or `/v2`). */
  baseUrl: string;
  apiKey?: string;
}

type Methods = 'GET' | 'PUT' | 'POST' | 'DELETE' | 'OPTIONS' | 'HEAD' | 'PATCH' | 'TRACE';

export interface PlatformClient extends Client<paths> {
  /**
   * POSTs with `stream: true` and answers the stream of events once its answer has begun (a refusal is thrown as a
   * PlatformError; the call is retried like any other until then).
   */
  stream<P extends StreamPath>(path: P, body: StreamBody<P>, init?: CallOptions & { headers?: HeadersInit }): Promise<EventStream<StreamEvent<P>>>;
  /** Every item of a paged list, page after page (following `next_cursor` or `next_page_token`); a refusal is thrown. */
  paginate<P extends PagedPath>(path: P, ...init: InitArgs<Init<P, 'get'>>): Pages<Page<P>, PageItem<P>>;
  /** A multipart upload, streamed: text fields first, then the file(s). Answers as `POST` does. */
  upload<P extends UploadPath>(
    path: P,
    form: UploadForm<P>,
    init?: CallOptions & { headers?: HeadersInit },
  ): Promise<FetchResponse<Operation<P, 'post'> & Record<string | number, unknown>, Record<string, never>, `${string}/${string}`>>;
}

/** An async iterable of every item; `pages()` iterates the pages themselves. */
export interface Pages<PageT, Item> extends AsyncIterable<Item> {
  pages(): AsyncIterable<PageT>;
}

/** The data of a call's answer, or the PlatformError of its refusal. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) throw PlatformError.fromResponse(response, error);
  return data as T;
}

export function createPlatformClient({ baseUrl, apiKey, headers, timeout, retry, fetch, ...rest }: PlatformClientOptions): PlatformClient {
  // `headers` may be any form fetch takes: a Headers instance and a list of pairs are read as fetch reads them
  // (openapi-fetch's merge reads only plain objects); a plain object keeps openapi-fetch's rules (null removes a
  // header, a list repeats it). Headers given here win over the key's Authorization.
  const given = headers instanceof Headers || Array.isArray(headers) ? new Headers(headers) : headers;
  const defaults = transport({ timeout, retry, fetch });
  const root = baseUrl.replace(/\/+$/, '');
  const base = mergeHeaders(apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined, given);
  const inner = createClient<paths>({ baseUrl: root, headers: base, fetch: (request) => send(defaults, request), ...rest });
  const perCall = (options: CallOptions): Transport | undefined =>
    options.timeout === undefined && options.retry === undefined ? undefined : transport({ timeout: options.timeout, retry: options.retry }, defaults);

  // Each method takes the call's own timeout and retry options beside openapi-fetch's.
  const client = { ...inner } as PlatformClient;
  for (const name of ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'] as Methods[]) {
    const call = inner[name] as (path: string, init?: Record<string, unknown>) => Promise<unknown>;
    (client as unknown as Record<string, unknown>)[name] = (path: string, init: Record<string, unknown> & CallOptions = {}) => {
      const { timeout: t, retry: r, ...options } = init;
      const own = perCall({ timeout: t, retry: r });
      return call(path, own ? { ...options, fetch: (request: Request) => send(own, request) } : options);
    };
  }
  client.request = ((method: string, path: string, init?: Record<string, unknown>) =>
    (client as unknown as Record<string, (p: string, i?: unknown) => unknown>)[method.toUpperCase()]!(path, init)) as PlatformClient['request'];

  client.stream = async (path, body, init = {}) => {
    const { data, error, response } = await (client.POST as (p: string, i: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(path, {
      body: { ...(body as object), stream: true },
      parseAs: 'stream',
      headers: mergeHeaders({ Accept: 'text/event-stream' }, init.headers === undefined ? undefined : new Headers(init.headers)),
      signal: init.signal,
      timeout: init.timeout,
      retry: init.retry,
    });
    if (error !== undefined || !response.ok) throw PlatformError.fromResponse(response, error);
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      await (data as ReadableStream | null)?.cancel();
      throw new PlatformError(`${path} answered ${response.headers.get('content-type')} rather than a stream of events`, {
        status: response.status,
        headers: response.headers,
      });
    }
    return new EventStream(response);
  };

  client.paginate = ((path: string, init: Record<string, unknown> & { params?: { query?: Record<string, unknown> } } = {}) => {
    async function* pages() {
      let query = { ...init.params?.query };
      for (;;) {
        const page = (await unwrap(client.GET(path as PagedPath, { ...init, params: { ...init.params, query } } as never))) as Record<string, unknown>;
        yield page;
        const cursor = page.next_cursor ?? page.next_page_token;
        const items = Object.values(page).find(Array.isArray) as unknown[] | undefined;
        if (typeof cursor !== 'string' || cursor === '' || !items?.length) return;
        query = { ...query, ['next_cursor' in page ? 'after' : 'page_token']: cursor };
      }
    }
    return {
      pages,
      async *[Symbol.asyncIterator]() {
        for await (const page of pages()) yield* Object.values(page).find(Array.isArray) ?? [];
      },
    };
  }) as PlatformClient['paginate'];

  client.upload = (async (path: string, form: Record<string, unknown>, init: CallOptions & { headers?: HeadersInit } = {}) => {
    const body = await multipartBody(form);
    const headers = mergeHeaders(base, init.headers === undefined ? undefined : new Headers(init.headers), {
      'Content-Type': body.contentType,
      ...(body.length === undefined ? {} : { 'Content-Length': String(body.length) }),
    });
    const t = perCall(init) ?? defaults;
    const make = () => new Request(`${root}${path}`, { method: 'POST', headers, body: body.open(), duplex: 'half', signal: init.signal } as RequestInit);
    const response = await send(t, make(), body.replayable ? make : null);
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: kept as text
    }
    return response.ok ? { data: parsed, response } : { error: parsed, response };
  }) as unknown as PlatformClient['upload'];

  return client;
}
