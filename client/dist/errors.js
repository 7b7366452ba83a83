// The errors the client throws. A refusal from the platform is a PlatformError carrying its envelope
// (`{"error": {message, type, param, code}}`), its status, its headers and its request id; a call that got no
// answer is a PlatformConnectionError (a PlatformTimeoutError when it took longer than the client's timeout); a
// stream that failed after it began is a PlatformStreamError. A call the caller aborts rejects with the signal's own
// reason, as fetch does.
// Several copies of this package may be loaded at once (the platform's testing entry carries its own): `instanceof`
// then checks a mark every error of every copy carries, rather than the class of one copy.
const KINDS = Symbol.for('@inference-platform/client.error-kinds');
function mark(error, kind) {
    const kinds = error[KINDS] ?? [];
    Object.defineProperty(error, KINDS, { value: [...kinds, kind], configurable: true });
}
function isKind(value, kind) {
    return typeof value === 'object' && value !== null && value[KINDS]?.includes(kind) === true;
}
export class PlatformError extends Error {
    /** The HTTP status of the answer; for a connection that failed, none. */
    status;
    /** The envelope's `error.code`, `error.type`, `error.param` (null when the platform gave none). */
    code;
    type;
    param;
    /** The answer's `x-request-id`: what the server's log line of the request carries. */
    requestId;
    headers;
    /** The whole body as parsed: the envelope, or whatever else the answer held (text that is not JSON). */
    body;
    constructor(message, init = {}) {
        super(message, init.cause === undefined ? undefined : { cause: init.cause });
        this.name = 'PlatformError';
        const envelope = init.body?.error;
        this.status = init.status;
        this.headers = init.headers;
        this.body = init.body;
        this.code = typeof envelope?.code === 'string' ? envelope.code : null;
        this.type = typeof envelope?.type === 'string' ? envelope.type : null;
        this.param = typeof envelope?.param === 'string' ? envelope.param : null;
        this.requestId = init.headers?.get('x-request-id') ?? null;
        mark(this, 'PlatformError');
    }
    /** The error for an answer that is not a success, from its parsed body. */
    static fromResponse(response, body) {
        const envelope = body?.error;
        const text = typeof envelope?.message === 'string' ? envelope.message : typeof body === 'string' && body ? body.slice(0, 500) : response.statusText;
        return new PlatformError(`${response.status} ${text}`, { status: response.status, headers: response.headers, body });
    }
    /** The mark this class's instances carry (not the class's `name`, which a bundler may rename). */
    static kind = 'PlatformError';
    static [Symbol.hasInstance](value) {
        // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` asks about (a subclass, too).
        return isKind(value, this.kind);
    }
}
/** No answer came: the connection could not be made or broke before the answer's headers (after the retries). */
export class PlatformConnectionError extends PlatformError {
    static kind = 'PlatformConnectionError';
    constructor(message, cause) {
        super(message, { cause });
        this.name = 'PlatformConnectionError';
        mark(this, 'PlatformConnectionError');
    }
}
/** No answer came within the client's `timeout` (after the retries). */
export class PlatformTimeoutError extends PlatformConnectionError {
    static kind = 'PlatformTimeoutError';
    constructor(message, cause) {
        super(message, cause);
        this.name = 'PlatformTimeoutError';
        mark(this, 'PlatformTimeoutError');
    }
}
/**
 * A stream of events failed after its answer began: an error event (the envelope, sent as the stream's last event
 * once the status line is gone), or the stream ended without its closing `[DONE]` (the connection was cut).
 */
export class PlatformStreamError extends PlatformError {
    static kind = 'PlatformStreamError';
    constructor(message, init = {}) {
        super(message, init);
        this.name = 'PlatformStreamError';
        mark(this, 'PlatformStreamError');
    }
}
