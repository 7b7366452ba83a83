import type { operations } from './api.js';
import { type PlatformClient, type PlatformClientOptions } from './client.js';
type Body<Op extends keyof operations> = operations[Op] extends {
    requestBody?: {
        content: {
            'application/json': infer B;
        };
    };
} ? B : never;
type Ok<Op extends keyof operations> = operations[Op] extends {
    responses: {
        200: {
            content: {
                'application/json': infer B;
            };
        };
    };
} ? B : never;
type Path<Op extends keyof operations> = operations[Op] extends {
    parameters: {
        path: infer Q;
    };
} ? Q : never;
type Query<Op extends keyof operations> = operations[Op] extends {
    parameters: {
        query?: infer Q;
    };
} ? NonNullable<Q> : never;
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
export declare function createControlClient({ controlKey, ...options }: ControlClientOptions): ControlClient;
export {};
