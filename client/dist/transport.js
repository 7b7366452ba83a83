// How each request is sent: a timeout per attempt, the caller's AbortSignal, and retries with backoff. The
// platform asks callers to retry its 429 and 503 with exponential backoff, and says how long to wait: this client
// waits what the answer says (`retry-after-ms`, then `Retry-After` in seconds or as a date, then the platform's
// `x-ratelimit-reset` in seconds), else backs off exponentially with jitter, as the official SDK does.
import { PlatformConnectionError, PlatformTimeoutError } from './errors.js';
export const RETRIED_STATUSES = [408, 429, 500, 502, 503, 504];
export const DEFAULT_TIMEOUT_MS = 60_000;
/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted)
            return reject(signal.reason);
        const done = () => {
            signal?.removeEventListener('abort', aborted);
            resolve();
        };
        const timer = setTimeout(done, ms);
        const aborted = () => {
            clearTimeout(timer);
            reject(signal.reason);
        };
        signal?.addEventListener('abort', aborted, { once: true });
    });
}
/** The wait an answer asks for, in ms, and the header that asked; none when it names none usable. */
export function requestedWait(headers, now = Date.now()) {
    const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
    if (Number.isFinite(ms) && ms >= 0)
        return { ms, source: 'retry-after-ms' };
    const after = headers.get('retry-after')?.trim();
    if (after) {
        // Seconds (RFC 9110: a whole number; fractions are read too), or an HTTP date.
        if (/^\d+(\.\d+)?$/.test(after))
            return { ms: Number(after) * 1000, source: 'retry-after' };
        const date = Date.parse(after);
        if (!Number.isNaN(date))
            return { ms: Math.max(0, date - now), source: 'retry-after' };
    }
    const reset = Number.parseFloat(headers.get('x-ratelimit-reset') ?? '');
    if (Number.isFinite(reset) && reset >= 0)
        return { ms: reset * 1000, source: 'x-ratelimit-reset' };
    return undefined;
}
export function transport(options = {}, base) {
    const retry = options.retry === false ? { maxRetries: 0 } : (options.retry ?? {});
    const from = base?.policy;
    return {
        timeout: options.timeout ?? base?.timeout ?? DEFAULT_TIMEOUT_MS,
        fetch: options.fetch ?? base?.fetch ?? ((request) => globalThis.fetch(request)),
        policy: {
            maxRetries: retry.maxRetries ?? from?.maxRetries ?? 2,
            initialDelayMs: retry.initialDelayMs ?? from?.initialDelayMs ?? 1_000,
            maxDelayMs: retry.maxDelayMs ?? from?.maxDelayMs ?? 10_000,
            maxRetryAfterMs: retry.maxRetryAfterMs ?? from?.maxRetryAfterMs ?? 60_000,
            statuses: retry.statuses ?? from?.statuses ?? RETRIED_STATUSES,
            sleep: retry.sleep ?? from?.sleep ?? sleep,
            random: retry.random ?? from?.random ?? Math.random,
            onRetry: retry.onRetry ?? from?.onRetry,
        },
    };
}
/** This client's own backoff before retry `retry` (1 for the first): doubling from the first delay, capped, with jitter. */
export function backoff(policy, retry) {
    const ms = Math.min(policy.initialDelayMs * 2 ** (retry - 1), policy.maxDelayMs);
    return ms * (1 - policy.random() * 0.25);
}
function retryable(response, policy) {
    const told = response.headers.get('x-should-retry');
    if (told === 'true')
        return true;
    if (told === 'false')
        return false;
    return policy.statuses.includes(response.status);
}
/**
 * Sends `request`, retrying as the transport says. `replay` makes the request again for a retry; by default a copy
 * taken before the first attempt (bodies in memory), and `null` for a body that can be sent only once (a stream):
 * such a request is never retried. The caller's `request.signal` aborts everything, the waits between attempts
 * included, and rejects with its reason.
 */
export async function send(t, request, replay) {
    const { policy } = t;
    const signal = request.signal;
    const spare = replay === undefined && policy.maxRetries > 0 ? request.clone() : undefined;
    const again = replay ?? (spare ? () => spare.clone() : null);
    for (let attempt = 0;; attempt++) {
        const current = attempt === 0 ? request : again();
        // One controller per attempt: the caller's signal aborts it (also while its body is read, after this returns),
        // the timeout only until the answer's headers.
        const controller = new AbortController();
        const forward = () => controller.abort(signal.reason);
        if (signal.aborted)
            throw signal.reason;
        signal.addEventListener('abort', forward, { once: true });
        let timedOut = false;
        const timer = t.timeout > 0
            ? setTimeout(() => {
                timedOut = true;
                controller.abort(new DOMException(`no answer within ${t.timeout} ms`, 'TimeoutError'));
            }, t.timeout)
            : undefined;
        let response;
        let failure;
        try {
            response = await t.fetch(new Request(current, { signal: controller.signal }));
        }
        catch (err) {
            if (signal.aborted)
                throw signal.reason;
            failure = err;
        }
        finally {
            clearTimeout(timer);
        }
        const canRetry = attempt < policy.maxRetries && again !== null;
        const event = (delayMs, reason, source) => ({
            retry: attempt + 1,
            delayMs,
            reason,
            source,
            url: request.url,
            method: request.method,
        });
        let wait;
        if (response) {
            if (response.ok || !canRetry || !retryable(response, policy))
                return response;
            signal.removeEventListener('abort', forward);
            const asked = requestedWait(response.headers);
            // An answer asking for a longer wait than the caller allows is the caller's to handle.
            if (asked && asked.ms > policy.maxRetryAfterMs)
                return response;
            wait = asked ? event(asked.ms, response.status, asked.source) : event(backoff(policy, attempt + 1), response.status, 'backoff');
            // The answer is not read: release its connection.
            await response.body?.cancel().catch(() => { });
        }
        else {
            signal.removeEventListener('abort', forward);
            const reason = timedOut ? 'timeout' : 'connection';
            if (!canRetry) {
                const where = `${request.method} ${request.url}`;
                const tries = attempt + 1 === 1 ? '' : ` (${attempt + 1} attempts)`;
                throw timedOut
                    ? new PlatformTimeoutError(`${where}: no answer within ${t.timeout} ms${tries}`, failure)
                    : new PlatformConnectionError(`${where}: no answer: ${failure?.message ?? failure}${tries}`, failure);
            }
            wait = event(backoff(policy, attempt + 1), reason, 'backoff');
        }
        policy.onRetry?.(wait);
        await policy.sleep(wait.delayMs, signal);
    }
}
