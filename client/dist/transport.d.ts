export interface RetryOptions {
    /** Retries after the first attempt (default 2, as the official SDK; 0: none). */
    maxRetries?: number;
    /** The first backoff when the answer names no wait, doubled at each retry (default 1000 ms). */
    initialDelayMs?: number;
    /** The longest backoff this client chooses itself (default 10,000 ms). */
    maxDelayMs?: number;
    /**
     * The longest wait an answer may ask for (default 60,000 ms). An answer asking for longer is not waited for: it
     * is returned (or thrown) at once, so the caller decides, rather than retried before the server is ready.
     */
    maxRetryAfterMs?: number;
    /** The statuses retried (default 408, 429, 500, 502, 503, 504); an answer's `x-should-retry: true|false` overrides. */
    statuses?: readonly number[];
    /** How the client waits between attempts: inject one in tests so that nothing sleeps on the wall clock. */
    sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
    /** The jitter's source (default Math.random): a backoff is shortened by up to a quarter. */
    random?: () => number;
    /** Called before each wait: why the attempt is retried and for how long the client waits. */
    onRetry?: (retry: RetryEvent) => void;
}
export interface RetryEvent {
    /** The retry about to be made: 1 for the first. */
    retry: number;
    delayMs: number;
    /** The answer's status, or why there was none. */
    reason: number | 'connection' | 'timeout';
    /** Where the wait came from: a header of the answer, or this client's backoff. */
    source: 'retry-after-ms' | 'retry-after' | 'x-ratelimit-reset' | 'backoff';
    url: string;
    method: string;
}
export interface TransportOptions {
    /** The longest wait for an answer's headers, per attempt, in ms (default 60,000; 0: none). */
    timeout?: number;
    /** Retries; `false` for none. */
    retry?: RetryOptions | false;
    /** The fetch used (default globalThis.fetch). */
    fetch?: (request: Request) => Promise<Response>;
}
export declare const RETRIED_STATUSES: readonly number[];
export declare const DEFAULT_TIMEOUT_MS = 60000;
/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<void>;
/** The wait an answer asks for, in ms, and the header that asked; none when it names none usable. */
export declare function requestedWait(headers: Headers, now?: number): {
    ms: number;
    source: RetryEvent['source'];
} | undefined;
interface Policy {
    maxRetries: number;
    initialDelayMs: number;
    maxDelayMs: number;
    maxRetryAfterMs: number;
    statuses: readonly number[];
    sleep: NonNullable<RetryOptions['sleep']>;
    random: () => number;
    onRetry?: RetryOptions['onRetry'];
}
export interface Transport {
    timeout: number;
    policy: Policy;
    fetch: (request: Request) => Promise<Response>;
}
export declare function transport(options?: TransportOptions, base?: Transport): Transport;
/** This client's own backoff before retry `retry` (1 for the first): doubling from the first delay, capped, with jitter. */
export declare function backoff(policy: Pick<Policy, 'initialDelayMs' | 'maxDelayMs' | 'random'>, retry: number): number;
/**
 * Sends `request`, retrying as the transport says. `replay` makes the request again for a retry; by default a copy
 * taken before the first attempt (bodies in memory), and `null` for a body that can be sent only once (a stream):
 * such a request is never retried. The caller's `request.signal` aborts everything, the waits between attempts
 * included, and rejects with its reason.
 */
export declare function send(t: Transport, request: Request, replay?: (() => Request) | null): Promise<Response>;
export {};
