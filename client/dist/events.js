// A stream of server-sent events (chat and completion chunks, speech audio), read as a typed async iterator. The
// platform sends each event as `data: <json>` and ends the stream with `data: [DONE]`; a failure after the stream
// began comes as a last event holding the error envelope. Parsing is eventsource-parser's (the WHATWG rules).
import { createParser } from 'eventsource-parser';
import { PlatformStreamError } from './errors.js';
export class EventStream {
    response;
    #consumed = false;
    #cancelled = false;
    #reader;
    constructor(
    /** The answer (status 2xx): its headers, e.g. `x-request-id`, and its body, which the iterator reads. */
    response) {
        this.response = response;
    }
    /** The answer's `x-request-id`. */
    get requestId() {
        return this.response.headers.get('x-request-id');
    }
    /** Stops reading and closes the connection; an iteration in progress ends without an error. */
    async cancel() {
        this.#consumed = true;
        this.#cancelled = true;
        await (this.#reader ?? this.response.body)?.cancel().catch(() => { });
    }
    /**
     * Each event's JSON, in order. Throws PlatformStreamError on an error event and when the stream ends without
     * `[DONE]` (the connection was cut: the answer is incomplete). Leaving the loop early closes the connection.
     */
    async *[Symbol.asyncIterator]() {
        if (this.#consumed)
            throw new PlatformStreamError('This stream has been read already: an answer can be iterated once.');
        this.#consumed = true;
        const { response } = this;
        const failure = (message, body, cause) => new PlatformStreamError(message, { status: response.status, headers: response.headers, body, cause });
        if (!response.body)
            throw failure('The answer has no body to read events from.');
        const messages = [];
        const parser = createParser({ onEvent: (message) => messages.push(message) });
        const reader = response.body.getReader();
        this.#reader = reader;
        const decoder = new TextDecoder();
        let done = false;
        try {
            while (!done) {
                let chunk;
                try {
                    chunk = await reader.read();
                }
                catch (err) {
                    if (this.#cancelled)
                        return;
                    throw failure(`The stream was cut before its end: ${err?.message ?? err}`, undefined, err);
                }
                parser.feed(chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true }));
                if (chunk.done)
                    parser.reset({ consume: true });
                for (const message of messages.splice(0)) {
                    // Named events are not the platform's (it sends only `data:`): skipped, as the official SDK skips them.
                    if (message.event !== undefined && message.event !== 'message')
                        continue;
                    if (message.data === '[DONE]') {
                        done = true;
                        break;
                    }
                    const event = JSON.parse(message.data);
                    const envelope = event?.error;
                    if (envelope && typeof envelope === 'object') {
                        throw failure(typeof envelope.message === 'string' ? envelope.message : 'The stream ended with an error event.', event);
                    }
                    yield event;
                    if (this.#cancelled)
                        return;
                }
                if (chunk.done && !done && this.#cancelled)
                    return;
                if (chunk.done && !done)
                    throw failure('The stream ended without [DONE]: the connection was cut, and the answer is incomplete.');
            }
        }
        finally {
            // Whether the loop finished, broke early or threw: nothing more is read, the connection is let go.
            await reader.cancel().catch(() => { });
        }
    }
}
