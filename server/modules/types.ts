// The types every module is written against (types only: nothing here runs, and nothing here imports the app).
// A module is one spec tag file: `spec/tags/<name>.yaml` is implemented by `server/modules/<name>/`, whose
// index.ts exports one descriptor: its handlers (a named function per operationId of that tag file, checked
// against the generated operation table), its seed, the runner work it brings, and its test fixtures.

import type { IncomingHttpHeaders } from 'node:http';
import type { PlatformClient } from '@inference-platform/client';
import type { Logger } from 'pino';
import type { components, operations as Operations, Readable, Writable } from '../../generated/api.d.ts';
import type { ModuleName, OperationId, operations } from '../../generated/operations.ts';
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Identity } from '../core/identity.ts';
import type { Machine } from '../core/machine.ts';
import type { Database, Tx } from '../db/index.ts';
import type { EngineRoutes } from '../engines/routes.ts';
import type { Upload, UploadRule } from '../http/multipart.ts';
import type { Reply } from '../http/reply.ts';
import type { Progression } from '../runner/progress.ts';
import type { Runner, WorkHandler } from '../runner/runner.ts';
import type { ControlPlane } from './control/plane.ts';

/** What the platform gives every handler, seed and work handler. */
export interface Services {
  config: Config;
  db: Database;
  clock: Clock;
  log: Logger;
  runner: Runner;
  /** Which engine serves a model, per capability (local by default). */
  engines: EngineRoutes;
  /** The control plane's per-process state (the Control tag): its journal, fault rules and reset's bootstrap. */
  control: ControlPlane;
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
  /**
   * The id names something of the platform's, the same for every caller (an instance type, a catalogue model), not
   * a project's: the auth matrix expects another project's caller to get the owner's answer instead of a 404.
   */
  shared?: true;
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

/** A kind of job the control plane can steer: its progression (machine, rows, timed steps, failure) and the operations creating one. */
export interface Steerable {
  // biome-ignore lint/suspicious/noExplicitAny: any module's progression.
  progression: Progression<any>;
  creates: OperationId[];
  /** Events only the module's own callers make (a worker's claim, which hands out its token): the control plane refuses them. */
  callerOnly?: readonly string[];
  /** The machine's timed step is not a progression's (a queue claim's timeout check): `next` takes the table's move. */
  untimed?: true;
}

export interface ModuleDescriptor<M extends ModuleName> {
  name: M;
  handlers: { [K in OperationsOf<M>]: Handler<K> };
  seed?: (ctx: SeedContext) => Promise<void>;
  /** The state machines this module declares (its spec tag file carries each one's table). */
  machines?: Machine<string, string>[];
  /** Runner work kinds this module brings, by kind. */
  work?: (services: Services) => Record<string, WorkHandler>;
  /** The jobs of this module the control plane can move and fail (control/time.ts), by the kind its paths name. */
  steer?: (services: Services) => Record<string, Steerable>;
  /**
   * Operations the spec authorises by a signed URL instead of a key (a security scheme other than `bearerAuth`):
   * the check, run after validation and before the body is read, that answers whom the request acts as or refuses it.
   */
  signed?: { [K in OperationsOf<M>]?: SignedCheck };
  /** Operations that take an upload, multipart or (`raw`) the whole body: the file's field and its byte limit (http/multipart.ts). */
  uploads?: { [K in OperationsOf<M>]?: UploadRule<UploadContext> };
  /** Stops what the module holds in this process besides its rows (interpreters, open websockets) when the platform closes. */
  stop?: (services: Services) => void;
  /** Loaded by the tests only. */
  fixtures?: () => Promise<Fixtures<M>>;
}
