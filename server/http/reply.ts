// What a handler answers. Most return their JSON body as a plain value (sent with the operation's documented
// success status); a handler that needs another status, extra headers, no body, plain text, a stream of
// Server-Sent Events, a file, or bytes made as they are sent returns a Reply instead. Only the pipeline touches the
// response (`send`), so JSON bodies still pass response validation and every handler stays a function of its request.
import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { WebSocket, WebSocketServer } from 'ws';
import { apiError } from '../core/errors.ts';
import { onFirstUse } from '../core/packages.ts';
import { logFailure, toApiError } from './error-handler.ts';

type Content =
  | { kind: 'json'; value: unknown }
  | { kind: 'empty' }
  | { kind: 'text'; value: string | Buffer; contentType: string }
  | { kind: 'sse'; events: AsyncIterable<unknown>; fault?: StreamFault }
  | { kind: 'file'; path: string; contentType?: string }
  | { kind: 'stream'; chunks: Iterable<Buffer> | AsyncIterable<Buffer>; contentType: string; length?: number }
  | { kind: 'websocket'; accept: (ws: WebSocket) => void };

/**
 * What a fault rule of the control plane does to a stream of events (set by the pipeline): once `afterChunks` events
 * are sent (or before `[DONE]`, for a shorter stream), pause `stallMs` with the connection open, then go on, or cut
 * the connection without `[DONE]`.
 */
export interface StreamFault {
  afterChunks: number;
  stallMs: number;
  cut: boolean;
}

interface Init {
  status?: number;
  headers?: Record<string, string>;
}

export class Reply<B = unknown> {
  /** Phantom: the JSON body's type, so a handler's replies are checked against its operation's response. */
  declare readonly body?: B;
  constructor(
    readonly content: Content,
    readonly status: number | undefined,
    readonly headers: Record<string, string>,
  ) {}
}

export const reply = {
  json: <B>(value: B, init: Init = {}) => new Reply<B>({ kind: 'json', value }, init.status, init.headers ?? {}),
  empty: (status = 204, headers: Record<string, string> = {}) => new Reply<never>({ kind: 'empty' }, status, headers),
  text: (value: string | Buffer, contentType: string, init: Init = {}) =>
    new Reply<never>({ kind: 'text', value, contentType }, init.status, init.headers ?? {}),
  /** Server-Sent Events: each item as `data: <json>`, then `data: [DONE]`. */
  sse: (events: AsyncIterable<unknown>, init: Init = {}) => new Reply<never>({ kind: 'sse', events }, init.status, init.headers ?? {}),
  /** A file from disk, streamed, with Range requests, Last-Modified and HEAD handled. */
  file: (path: string, contentType?: string, init: Init = {}) => new Reply<never>({ kind: 'file', path, contentType }, init.status, init.headers ?? {}),
  /** Bytes produced as they are sent (an archive built on the fly); `length`, when known, becomes Content-Length. */
  stream: (chunks: Iterable<Buffer> | AsyncIterable<Buffer>, contentType: string, init: Init & { length?: number } = {}) =>
    new Reply<never>({ kind: 'stream', chunks, contentType, length: init.length }, init.status, init.headers ?? {}),
  /** The request's connection becomes a websocket (101), handed to `accept`; only for a request that asked to upgrade (`upgradeOf`). */
  websocket: (accept: (ws: WebSocket) => void) => new Reply<never>({ kind: 'websocket', accept }, 101, {}),
};

/** The largest websocket message a client may send (a larger one closes the connection with 1009). */
export const WEBSOCKET_MAX_MESSAGE_BYTES = 1 << 20;
// ws (about 50 ms to load) is loaded with the first websocket, not at start.
const ws = onFirstUse<typeof import('ws')>('ws');
let server: WebSocketServer | undefined;
const websockets = (): WebSocketServer =>
  (server ??= new (ws().WebSocketServer)({
    noServer: true,
    maxPayload: WEBSOCKET_MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
  }));

/**
 * Set by the server's `upgrade` listener (platform.ts): the socket and the bytes read past the request's head. A
 * request that asked to upgrade runs the same pipeline as any other (authentication, validation, the handler);
 * its error answers are written on the socket as plain HTTP responses, and its handler's websocket reply upgrades it.
 */
export const upgradeOf = (req: Request): { socket: Duplex; head: Buffer } | undefined => (req as { upgrade?: { socket: Duplex; head: Buffer } }).upgrade;

/** The characters of an answer an observer is given at most (guests.ts; its text is cut there). */
export const CAPTURE_LIMIT = 4096;

/** Checks a JSON body against the contract before it is sent (http/responses.ts); absent: no check. */
export type CheckResponse = (status: number, body: unknown) => void;

/**
 * A body that never changes (a catalogue read once): frozen all the way down, so the pipeline checks it against
 * the contract and serialises it once, then sends the same text each time it is answered.
 */
export function constant<T>(body: T): T {
  if (typeof body === 'object' && body !== null && !Object.isFrozen(body)) {
    for (const v of Object.values(body)) constant(v);
    Object.freeze(body);
  }
  return body;
}

/** The text of each constant body, per status, once checked. */
const sentBefore = new WeakMap<object, Map<number, string>>();

function sendJson(res: Response, status: number, body: unknown, check?: CheckResponse): void {
  if (typeof body !== 'object' || body === null || !Object.isFrozen(body)) {
    check?.(status, body);
    return void res.status(status).json(body);
  }
  const texts = sentBefore.get(body) ?? new Map<number, string>();
  sentBefore.set(body, texts);
  let text = texts.get(status);
  if (text === undefined) {
    check?.(status, body);
    text = JSON.stringify(body);
    texts.set(status, text);
  }
  if (!res.get('Content-Type')) res.set('Content-Type', 'application/json; charset=utf-8');
  res.status(status).send(text);
}

/** Sends a handler's result: a plain value is the JSON body (none when undefined) with `successStatus`. */
export async function send(req: Request, res: Response, result: unknown, successStatus: number, log: Logger, check?: CheckResponse): Promise<void> {
  if (!(result instanceof Reply)) {
    if (result === undefined || successStatus === 204) return void res.status(successStatus).end();
    return sendJson(res, successStatus, result, check);
  }
  const status = result.status ?? successStatus;
  res.set(result.headers);
  const c = result.content;
  switch (c.kind) {
    case 'json':
      return sendJson(res, status, c.value, check);
    case 'empty':
      return void res.status(status).end();
    case 'text':
      return void res.status(status).type(c.contentType).send(c.value);
    case 'file':
      if (c.contentType) res.type(c.contentType);
      return new Promise<void>((resolve, reject) =>
        res.status(status).sendFile(c.path, { dotfiles: 'allow', cacheControl: false }, (err) => (err && !res.headersSent ? reject(err) : resolve())),
      );
    case 'sse':
      return streamEvents(req, res, status, c.events, log, c.fault);
    case 'stream':
      return streamBytes(res, status, c, log);
    case 'websocket': {
      const upgrade = upgradeOf(req);
      if (!upgrade)
        throw apiError(
          426,
          'upgrade_required',
          'This operation is a websocket: connect with a websocket client (the request must ask to upgrade: Connection: Upgrade, Upgrade: websocket).',
        );
      res.detachSocket(upgrade.socket as never);
      websockets().handleUpgrade(req, upgrade.socket, upgrade.head, (ws) => {
        // The request is answered (101): the log line, the journal and the observers hear of it as of any answer.
        res.statusCode = 101;
        res.emit('finish');
        c.accept(ws);
      });
      return;
    }
  }
}

async function streamBytes(res: Response, status: number, c: Extract<Content, { kind: 'stream' }>, log: Logger): Promise<void> {
  res.status(status).type(c.contentType);
  if (c.length !== undefined) res.set('Content-Length', String(c.length));
  try {
    // A HEAD request's response drops what is written (Node knows the request was HEAD), so HEAD sends the headers only.
    await pipeline(Readable.from(c.chunks, { objectMode: false }), res);
  } catch (err) {
    // pipeline has destroyed the response, so the caller sees a cut transfer (the status line is gone already). A
    // caller who hung up is no failure of ours; anything else is logged.
    if ((err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') log.error({ err, requestId: res.getHeader('x-request-id') }, 'stream failed');
  }
}

async function streamEvents(req: Request, res: Response, status: number, events: AsyncIterable<unknown>, log: Logger, fault?: StreamFault): Promise<void> {
  res.status(status).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  res.flushHeaders();
  let gone = false;
  req.once('close', () => (gone = true));
  // The first events as text, for an observer of the answer (guests.ts: as a JSON body is kept).
  let written = '';
  const write = async (chunk: string) => {
    if (written.length < CAPTURE_LIMIT) res.locals.sent = written += chunk;
    if (!res.write(chunk)) await once(res, 'drain');
  };
  let sent = 0;
  let cut = false;
  // The fault's effect, once, when its turn comes; true when it cut the connection.
  const interrupt = async (atEnd = false) => {
    if (!fault || (sent < fault.afterChunks && !atEnd)) return false;
    const { stallMs } = fault;
    cut = fault.cut;
    fault = undefined;
    if (stallMs) await sleep(stallMs);
    // Ending the socket (not destroying it) sends what was written first; the body's last chunk never comes.
    if (cut) res.socket?.end();
    return cut;
  };
  try {
    for await (const event of events) {
      if ((await interrupt()) || gone) break; // leaving the loop ends the generator, so the engine stops producing
      await write(`data: ${JSON.stringify(event)}\n\n`);
      sent++;
    }
    if (!gone && !cut && !(await interrupt(true))) await write('data: [DONE]\n\n');
  } catch (err) {
    // The status line is gone: the failure travels as a last event in the envelope.
    const apiErr = toApiError(err);
    logFailure(log, err, apiErr, { requestId: res.getHeader('x-request-id') }, 'stream failed');
    if (!gone) await write(`data: ${JSON.stringify(apiErr.body)}\n\n`).catch(() => {});
  } finally {
    if (!cut) res.end();
  }
}
