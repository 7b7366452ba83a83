// What the pipeline gives the operations it runs and what it takes from them: the services, a request's context, a
// handler's signature, and the table of operations it serves. Modules implement these (modules/types.ts re-exports
// them); the pipeline (app.ts) calls them without knowing any module.
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { operations as Operations, Readable, Writable } from '../../generated/api.d.ts';
import type { OperationId } from '../../generated/operations.ts';
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Identity } from '../core/identity.ts';
import type { Database } from '../db/index.ts';
import type { Engines } from '../engines/intercept.ts';
import type { RateLimits } from '../limits/rate-limits.ts';
import type { Runner } from '../runner/runner.ts';
import type { Upload, UploadRule } from './multipart.ts';
import type { Reply } from './reply.ts';

/** What the platform gives every handler, seed and work handler. */
export interface Services {
  config: Config;
  db: Database;
  clock: Clock;
  log: Logger;
  runner: Runner;
  /** Which engine serves a model, per capability (local by default), and what may answer instead (engines/intercept.ts). */
  engines: Engines;
  /** The serverless rate limits (limits/rate-limits.ts): the pipeline applies them, and batches line by line. */
  limits: RateLimits;
}

type Op<K extends OperationId> = Operations[K];
type Part<T, K extends string> = T extends { [P in K]?: infer V } ? (undefined extends V ? Exclude<V, undefined> | undefined : V) : undefined;
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : T extends { content: { 'multipart/form-data': infer B } } ? B : undefined;
// 302: an operation whose success is a redirect (the signed upload's POST) answers its body with it.
type SuccessOf<R> = R extends { 200: infer S }
  ? S
  : R extends { 201: infer S }
    ? S
    : R extends { 202: infer S }
      ? S
      : R extends { 302: infer S }
        ? S
        : undefined;

export type PathParams<K extends OperationId> = Part<Op<K>['parameters'], 'path'>;
export type QueryParams<K extends OperationId> = Part<Op<K>['parameters'], 'query'>;
export type RequestBody<K extends OperationId> = Writable<JsonOf<NonNullable<Part<Op<K>, 'requestBody'>>>>;
export type ResponseBody<K extends OperationId> = Readable<JsonOf<SuccessOf<Op<K>['responses']>>>;

export interface Context<K extends OperationId> extends Services {
  operationId: K;
  params: PathParams<K>;
  query: QueryParams<K>;
  body: RequestBody<K>;
  headers: IncomingHttpHeaders;
  /** Where the caller reached this server (`http://host:port`), the origin of the absolute URLs it hands out (http/origin.ts). */
  origin: string;
  /** Files of a multipart body, by field (operations with an `uploads` rule; http/multipart.ts); empty otherwise. */
  uploads: Record<string, Upload>;
  /** The caller; every resource lookup is scoped to `identity.projectId`. */
  identity: Identity;
}

/** A signed operation's check of its request (its path parameters and validated query). */
export type SignedCheck = (services: Services, request: { params: Record<string, string>; query: Record<string, unknown> }) => Promise<Identity>;

/** What an upload rule's `beforeFile` check is given: the services and the caller. */
export type UploadContext = Services & { identity: Identity };

/** A handler answers its body (sent with the operation's documented success status) or a Reply (http/reply.ts). */
export type Handler<K extends OperationId> = (ctx: Context<K>) => Promise<ResponseBody<K> | Reply<ResponseBody<K>> | Reply<never>>;

/** The operations the pipeline serves (an operation of the spec without a handler answers 404), by operationId. */
export interface Served {
  handlers: Partial<Record<OperationId, (ctx: never) => Promise<unknown>>>;
  /** The rules of the operations that take a multipart file or (`raw`) the whole body. */
  uploads: Partial<Record<OperationId, UploadRule<UploadContext>>>;
  /** The checks of the operations a signed URL authorises instead of a key. */
  signed: Partial<Record<OperationId, SignedCheck>>;
}
