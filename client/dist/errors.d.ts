import type { components } from './api.js';
export type ErrorEnvelope = components['schemas']['ErrorData'];
export declare class PlatformError extends Error {
    /** The HTTP status of the answer; for a connection that failed, none. */
    readonly status: number | undefined;
    /** The envelope's `error.code`, `error.type`, `error.param` (null when the platform gave none). */
    readonly code: string | null;
    readonly type: string | null;
    readonly param: string | null;
    /** The answer's `x-request-id`: what the server's log line of the request carries. */
    readonly requestId: string | null;
    readonly headers: Headers | undefined;
    /** The whole body as parsed: the envelope, or whatever else the answer held (text that is not JSON). */
    readonly body: unknown;
    constructor(message: string, init?: {
        status?: number;
        headers?: Headers;
        body?: unknown;
        cause?: unknown;
    });
    /** The error for an answer that is not a success, from its parsed body. */
    static fromResponse(response: Response, body: unknown): PlatformError;
    /** The mark this class's instances carry (not the class's `name`, which a bundler may rename). */
    static readonly kind: string;
    static [Symbol.hasInstance](value: unknown): boolean;
}
/** No answer came: the connection could not be made or broke before the answer's headers (after the retries). */
export declare class PlatformConnectionError extends PlatformError {
    static readonly kind: string;
    constructor(message: string, cause?: unknown);
}
/** No answer came within the client's `timeout` (after the retries). */
export declare class PlatformTimeoutError extends PlatformConnectionError {
    static readonly kind: string;
    constructor(message: string, cause?: unknown);
}
/**
 * A stream of events failed after its answer began: an error event (the envelope, sent as the stream's last event
 * once the status line is gone), or the stream ended without its closing `[DONE]` (the connection was cut).
 */
export declare class PlatformStreamError extends PlatformError {
    static readonly kind: string;
    constructor(message: string, init?: {
        status?: number;
        headers?: Headers;
        body?: unknown;
        cause?: unknown;
    });
}
