// One handler per operationId. `Handlers` is keyed by the generated operation table, so an operation in the spec
// without a handler here fails `tsc`; each handler's parameters, body and result are typed from the spec.
import type { Request, Response } from 'express';
import type { operations as Operations, Readable, Writable } from '../generated/api.d.ts';
import type { OperationId } from '../generated/operations.ts';
import type { Identity } from './accounts.ts';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Database } from './db/index.ts';
import type { Runner } from './runner.ts';
import type { Logger } from 'pino';
import { identityHandlers } from './modules/identity.ts';
import { computeHandlers } from './modules/compute.ts';
import { volumesHandlers } from './modules/volumes.ts';
import { secretsHandlers } from './modules/secrets.ts';
import { hardwareHandlers } from './modules/hardware.ts';
import { modelsHandlers } from './modules/models.ts';
import { endpointsHandlers } from './modules/endpoints.ts';
import { adaptersHandlers } from './modules/adapters.ts';
import { dedicatedHandlers } from './modules/dedicated.ts';
import { inferenceHandlers } from './modules/inference.ts';

export interface Services {
  config: Config;
  db: Database;
  clock: Clock;
  log: Logger;
  runner: Runner;
}

type Op<K extends OperationId> = Operations[K];
type Part<T, K extends string> = T extends { [P in K]?: infer V } ? (undefined extends V ? Exclude<V, undefined> | undefined : V) : undefined;
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : undefined;
type SuccessOf<R> = R extends { 200: infer S } ? S : R extends { 201: infer S } ? S : R extends { 202: infer S } ? S : undefined;

export type PathParams<K extends OperationId> = Part<Op<K>['parameters'], 'path'>;
export type QueryParams<K extends OperationId> = Part<Op<K>['parameters'], 'query'>;
export type RequestBody<K extends OperationId> = Writable<JsonOf<NonNullable<Part<Op<K>, 'requestBody'>>>>;
export type ResponseBody<K extends OperationId> = Readable<JsonOf<SuccessOf<Op<K>['responses']>>>;

export interface Context<K extends OperationId> extends Services {
  params: PathParams<K>;
  query: QueryParams<K>;
  body: RequestBody<K>;
  /** The caller; every resource lookup is scoped to `identity.projectId`. */
  identity: Identity;
  req: Request;
  res: Response;
}

export type Handler<K extends OperationId> = (ctx: Context<K>) => Promise<ResponseBody<K>>;
export type Handlers = { [K in OperationId]: Handler<K> };
/** What a module (one per spec tag) exports: handlers for some of the operations. */
export type ModuleHandlers = Partial<Handlers>;

export const handlers: Handlers = {
  ...identityHandlers,
  ...computeHandlers,
  ...volumesHandlers,
  ...secretsHandlers,
  ...hardwareHandlers,
  ...modelsHandlers,
  ...endpointsHandlers,
  ...adaptersHandlers,
  ...dedicatedHandlers,
  ...inferenceHandlers,
};
