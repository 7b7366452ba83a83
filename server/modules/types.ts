// The types every module is written against (types only: nothing here runs, and nothing here imports the app).
// A module is one spec tag file: `spec/tags/<name>.yaml` is implemented by `server/modules/<name>/`, whose
// index.ts exports one descriptor: its handlers (a named function per operationId of that tag file, checked
// against the generated operation table), its seed, the runner work it brings, its fixture sections, and its test
// fixtures. What the pipeline gives a handler (its context and the services) is the pipeline's (http/context.ts).

import type { PlatformClient } from '@inference-platform/client';
import type { components, Readable } from '../../generated/api.d.ts';
import type { ModuleName, OperationId, operations } from '../../generated/operations.ts';
import type { Clock } from '../core/clock.ts';
import type { Machine } from '../core/machine.ts';
import type { Tx } from '../db/index.ts';
import type { Handler, Services, SignedCheck, UploadContext } from '../http/context.ts';
import type { UploadRule } from '../http/multipart.ts';
import type { Progression } from '../runner/progress.ts';
import type { Runner, WorkHandler } from '../runner/runner.ts';

export type {
  Context,
  Handler,
  PathParams,
  QueryParams,
  RequestBody,
  ResponseBody,
  Services,
  SignedCheck,
  UploadContext,
} from '../http/context.ts';

/** A schema of the spec as a response carries it (read-only fields included): what a module's wire.ts builds. */
export type Wire<K extends keyof components['schemas']> = Readable<components['schemas'][K]>;

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
  /** Moves the platform's clock forward and runs every work item that became due. */
  advance(ms: number): Promise<void>;
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

type FixtureContents = components['schemas']['FixtureProjectContents'];
/** The sections of a fixtures document's project that modules fill (API keys are the accounts', filled by the control plane). */
export type FixtureSectionName = Exclude<keyof FixtureContents, 'project' | 'api_keys'>;
export type FixtureItem<S extends FixtureSectionName> = NonNullable<FixtureContents[S]>[number];
/** The lists a fixtures document's answer gives the ids made in. */
export type FixtureList = Exclude<keyof components['schemas']['FixturesApplied'], 'object'>;

/** Where a section's item is made: inside the document's one transaction, in the project it goes into. */
export interface FixtureFill {
  tx: Tx;
  services: Pick<Services, 'db' | 'clock' | 'config'>;
  project: { id: string; slug: string };
  /** Files written before the commit (their paths): removed again if the document does not commit. */
  written: string[];
}

/** What an item made: its ids by list, and what the runner does once the document has committed. */
export interface FixtureMade {
  ids: Partial<Record<FixtureList, string[]>>;
  after?: (runner: Runner) => Promise<unknown>;
}

/**
 * How a module makes one item of its section of a fixtures document (the Control tag's applyFixtures, and
 * FIXTURES_FILE), through its own creation code. Sections are filled in `order` within a project (a fine-tune may
 * train on a file of the same document). A refusal names the item's field relative to the item (`id`,
 * `request.model`): the control plane prefixes the item's place in the document.
 */
export interface FixtureSection<S extends FixtureSectionName> {
  order: number;
  fill(f: FixtureFill, item: FixtureItem<S>): Promise<FixtureMade>;
}

export type FixtureSections = { [S in FixtureSectionName]?: FixtureSection<S> };

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
  /** The sections of a fixtures document this module fills. */
  fixtureSections?: FixtureSections;
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

/** Any module's descriptor, as the platform assembles them. */
// biome-ignore lint/suspicious/noExplicitAny: a descriptor of any module.
export type AnyModule = ModuleDescriptor<any>;
