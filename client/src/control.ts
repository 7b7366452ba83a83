// The control plane's client: what a test suite calls to steer the platform (the spec's Control tag, paths under
// `/_control/`), typed from the same generated types as the API, authenticated by the control key. Every method
// answers the operation's data and throws a PlatformError on a refusal.
//
//   const control = createControlClient({ baseUrl, controlKey });
//   await control.fault({ match: { operations: ['createChatCompletion'] }, status: 429, count: 1 });
//   await control.reset();

import type { operations } from './api.js';
import { createPlatformClient, type PlatformClient, type PlatformClientOptions, unwrap } from './client.js';

type Body<Op extends keyof operations> = operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Ok<Op extends keyof operations> = operations[Op] extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
type Path<Op extends keyof operations> = operations[Op] extends { parameters: { path: infer Q } } ? Q : never;
type Query<Op extends keyof operations> = operations[Op] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export interface ControlClientOptions extends Omit<PlatformClientOptions, 'apiKey'> {
  /** The control key: `CONTROL_KEY`, or the one the platform's first start printed (never a project's API key). */
  controlKey: string;
}

export interface ControlClient {
  /** The typed client underneath, with the control key: every control operation by its path. */
  readonly api: PlatformClient;
  /** Back to the first start's state (the default project and its development key stay), or one project's resources gone. */
  reset(body?: Body<'resetPlatform'>): Promise<Ok<'resetPlatform'>>;
  /** Copies the whole platform under `name` (kept in the database; a reset leaves it). */
  snapshot(name: string): Promise<Ok<'createSnapshot'>>;
  /** Puts the snapshot back in one transaction, dropping whatever was made since. */
  restore(name: string): Promise<Ok<'restoreSnapshot'>>;
  snapshots: {
    list(): Promise<Ok<'listSnapshots'>>;
    delete(name: string): Promise<Ok<'deleteSnapshot'>>;
  };
  /**
   * A scripted answer: what the engine answers for the requests `match` selects, one of `answers` per request in
   * order (a tool call, then the final text: an agent loop end to end). Answers the rule (its `id`).
   */
  script(rule: Body<'createScript'>): Promise<Ok<'createScript'>>;
  scripts: {
    list(): Promise<Ok<'listScripts'>>;
    get(id: string): Promise<Ok<'getScript'>>;
    delete(id: string): Promise<Ok<'deleteScript'>>;
    clear(): Promise<Ok<'clearScripts'>>;
  };
  /** A fault rule: the platform's error for a status, a delay, a dropped connection or a cut stream, for the requests `match` selects. */
  fault(rule: Body<'createFault'>): Promise<Ok<'createFault'>>;
  faults: {
    list(): Promise<Ok<'listFaults'>>;
    delete(id: string): Promise<Ok<'deleteFault'>>;
    clear(): Promise<Ok<'clearFaults'>>;
  };
  /** The requests this server process answered, newest first (bodies redacted; keys never recorded). */
  journal(query?: Query<'listJournal'>): Promise<Ok<'listJournal'>['data']>;
  clearJournal(): Promise<Ok<'clearJournal'>>;
  time: {
    now(): Promise<Ok<'getTime'>>;
    /** Moves the platform's clock forward; every timed step due on the way runs, in order, before this answers. */
    advance(seconds: number): Promise<Ok<'advanceTime'>>;
  };
  rateLimits: {
    get(query: Query<'getRateLimit'>): Promise<Ok<'getRateLimit'>>;
    /** Sets an organization x model's limit, usage or window (e.g. to see the application back off on a 429). */
    set(body: Body<'setRateLimit'>): Promise<Ok<'setRateLimit'>>;
  };
  /** Moves one job through its state machine (`{to: 'next'}`, `'terminal'`, or `'failed'` with an error code). */
  transition(kind: Path<'transitionJob'>['kind'], id: string, body: Body<'transitionJob'>): Promise<Ok<'transitionJob'>>;
  /** Organizations, projects, keys with given secrets, files, jobs... from one document, all or nothing. */
  fixtures(document: Body<'applyFixtures'>): Promise<Ok<'applyFixtures'>>;
  overview(query?: Query<'getControlOverview'>): Promise<Ok<'getControlOverview'>>;
}

export function createControlClient({ controlKey, ...options }: ControlClientOptions): ControlClient {
  const api = createPlatformClient({ ...options, apiKey: controlKey });
  // The paths are typed; the bodies are checked by the signatures above.
  const body = <T>(b: T) => ({ body: b }) as { body: never };
  return {
    api,
    reset: (b) => unwrap(api.POST('/_control/reset', b === undefined ? {} : { body: b })),
    snapshot: (name) => unwrap(api.POST('/_control/snapshots', { body: { name } })),
    restore: (name) => unwrap(api.POST('/_control/snapshots/{name}/restore', { params: { path: { name } } })),
    snapshots: {
      list: () => unwrap(api.GET('/_control/snapshots')),
      delete: (name) => unwrap(api.DELETE('/_control/snapshots/{name}', { params: { path: { name } } })),
    },
    script: (rule) => unwrap(api.POST('/_control/scripts', body(rule))),
    scripts: {
      list: () => unwrap(api.GET('/_control/scripts')),
      get: (id) => unwrap(api.GET('/_control/scripts/{scriptId}', { params: { path: { scriptId: id } } })),
      delete: (id) => unwrap(api.DELETE('/_control/scripts/{scriptId}', { params: { path: { scriptId: id } } })),
      clear: () => unwrap(api.DELETE('/_control/scripts')),
    },
    fault: (rule) => unwrap(api.POST('/_control/faults', body(rule))),
    faults: {
      list: () => unwrap(api.GET('/_control/faults')),
      delete: (id) => unwrap(api.DELETE('/_control/faults/{faultId}', { params: { path: { faultId: id } } })),
      clear: () => unwrap(api.DELETE('/_control/faults')),
    },
    journal: async (query) => (await unwrap(api.GET('/_control/journal', { params: { query } }))).data,
    clearJournal: () => unwrap(api.DELETE('/_control/journal')),
    time: {
      now: () => unwrap(api.GET('/_control/time')),
      advance: (seconds) => unwrap(api.POST('/_control/time/advance', { body: { seconds } })),
    },
    rateLimits: {
      get: (query) => unwrap(api.GET('/_control/rate-limits', { params: { query } })),
      set: (b) => unwrap(api.PATCH('/_control/rate-limits', body(b))),
    },
    transition: (kind, id, b) => unwrap(api.POST('/_control/jobs/{kind}/{id}/transition', { params: { path: { kind, id } }, ...body(b) })),
    fixtures: (document) => unwrap(api.POST('/_control/fixtures', body(document))),
    overview: (query) => unwrap(api.GET('/_control/overview', { params: { query } })),
  };
}
