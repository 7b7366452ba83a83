// The types every module is written against (types only: nothing here runs, and nothing here imports the app).
// A module is one spec tag file: `spec/tags/<name>.yaml` is implemented by `server/modules/<name>/`, whose
// index.ts exports one descriptor: its handlers (a named function per operationId of that tag file, checked
// against the generated operation table), its seed, the runner work it brings, and its test fixtures.
import type { Logger } from 'pino';
import type { IncomingHttpHeaders } from 'node:http';
import type { components, operations as Operations, Readable, Writable } from '../../generated/api.d.ts';
import type { ModuleName, OperationId, operations } from '../../generated/operations.ts';
import type { PlatformClient } from '@inference-platform/client';
import type { Identity } from '../accounts.ts';
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Machine } from '../core/machine.ts';
import type { Database, Tx } from '../db/index.ts';
import type { EngineRoutes } from '../engines/routes.ts';
import type { Reply } from '../http/reply.ts';
import type { Runner, WorkHandler } from '../runner/runner.ts';

/** What the platform gives every handler, seed and work handler. */
export interface Services {
  config: Config;
  db: Database;
  clock: Clock;
  log: Logger;
  runner: Runner;
  /** Which engine serves a model, per capability (local by default). */
  engines: EngineRoutes;
}

type Op<K extends OperationId> = Operations[K];
type Part<T, K extends string> = T extends { [P in K]?: infer V } ? (undefined extends V ? Exclude<V, undefined> | undefined : V) : undefined;
type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : T extends { content: { 'multipart/form-data': infer B } } ? B : undefined;
type SuccessOf<R> = R extends { 200: infer S } ? S : R extends { 201: infer S } ? S : R extends { 202: infer S } ? S : undefined;

/** A schema of the spec as a response carries it (read-only fields included): what a module's wire.ts builds. */
export type Wire<K extends keyof components['schemas']> = Readable<components['schemas'][K]>;

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
  /** The caller; every resource lookup is scoped to `identity.projectId`. */
  identity: Identity;
  /**
   * On operations the spec marks `x-rate-limited`: counts the request against the caller's rate limits on `model`
   * (throwing the 429 or 503). The pipeline calls it itself when the JSON body has a string `model`; a handler that
   * parses its own body (multipart) calls it once it has read `model`, with the fields read so far (for the token
   * estimate), before the work. Calling it again does nothing. Absent on other operations.
   */
  admit?: (model: string, body: unknown) => Promise<void>;
}

/** A handler answers its body (sent with the operation's documented success status) or a Reply (http/reply.ts). */
export type Handler<K extends OperationId> = (ctx: Context<K>) => Promise<ResponseBody<K> | Reply<ResponseBody<K>> | Reply<never>>;

/** The operations of a module, from the generated table. */
export type OperationsOf<M extends ModuleName> = { [K in OperationId]: (typeof operations)[K]['module'] extends M ? K : never }[OperationId];

/** Runs once per database (recorded in SeedRun), inside the first start's transaction; modules are seeded in registry order. */
export interface SeedContext {
  tx: Tx;
  clock: Clock;
  /** The default project, and its organization. */
  projectId: string;
  organizationId: string;
}

/** A request the auth matrix can send: path parameters, and the query and body that would succeed for the owner. */
export interface FixtureRequest {
  params: Record<string, string>;
  query?: Record<string, string | number | boolean>;
  body?: unknown;
}

/** The slice of a test platform a module's fixtures use (test/support/platform.ts provides it). */
export interface FixtureKit {
  services: Services;
  /** The owner: a caller in a project other than the default one. */
  owner: { key: string; projectId: string; api: PlatformClient };
}

export interface Fixtures<M extends ModuleName> {
  /**
   * For each operation that takes an id: create, as `owner`, what it addresses, and answer a request that would
   * succeed for the owner. The auth matrix sends it with another project's key and expects the 404 of an absent id.
   */
  crossProject: { [K in OperationsOf<M>]?: (kit: FixtureKit) => Promise<FixtureRequest> };
}

export interface ModuleDescriptor<M extends ModuleName> {
  name: M;
  handlers: { [K in OperationsOf<M>]: Handler<K> };
  seed?: (ctx: SeedContext) => Promise<void>;
  /** The state machines this module declares (its spec tag file carries each one's table). */
  machines?: Machine<string, string>[];
  /** Runner work kinds this module brings, by kind. */
  work?: (services: Services) => Record<string, WorkHandler>;
  /** Loaded by the tests only. */
  fixtures?: () => Promise<Fixtures<M>>;
}
