export declare class EventStream<T> implements AsyncIterable<T> {
    #private;
    /** The answer (status 2xx): its headers, e.g. `x-request-id`, and its body, which the iterator reads. */
    readonly response: Response;
    constructor(
    /** The answer (status 2xx): its headers, e.g. `x-request-id`, and its body, which the iterator reads. */
    response: Response);
    /** The answer's `x-request-id`. */
    get requestId(): string | null;
    /** Stops reading and closes the connection; an iteration in progress ends without an error. */
    cancel(): Promise<void>;
    /**
     * Each event's JSON, in order. Throws PlatformStreamError on an error event and when the stream ends without
     * `[DONE]` (the connection was cut: the answer is incomplete). Leaving the loop early closes the connection.
     */
    [Symbol.asyncIterator](): AsyncIterator<T>;
}
