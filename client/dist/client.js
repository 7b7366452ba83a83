// The typed client: openapi-fetch over the generated `paths`, each method with a timeout per attempt, the caller's
// AbortSignal and retries (transport.ts), and beside them `stream` (server-sent events, events.ts), `paginate`
// (cursor-paged lists) and `upload` (streamed multipart, upload.ts). index.ts is what the package exports.
import createClient, { mergeHeaders } from 'openapi-fetch';
import { PlatformError } from './errors.js';
import { EventStream } from './events.js';
import { send, transport } from './transport.js';
import { multipartBody } from './upload.js';
/** The data of a call's answer, or the PlatformError of its refusal. */
export async function unwrap(call) {
    const { data, error, response } = await call;
    if (error !== undefined || !response.ok)
        throw PlatformError.fromResponse(response, error);
    return data;
}
export function createPlatformClient({ baseUrl, apiKey, headers, timeout, retry, fetch, ...rest }) {
    // `headers` may be any form fetch takes: a Headers instance and a list of pairs are read as fetch reads them
    // (openapi-fetch's merge reads only plain objects); a plain object keeps openapi-fetch's rules (null removes a
    // header, a list repeats it). Headers given here win over the key's Authorization.
    const given = headers instanceof Headers || Array.isArray(headers) ? new Headers(headers) : headers;
    const defaults = transport({ timeout, retry, fetch });
    const root = baseUrl.replace(/\/+$/, '');
    const base = mergeHeaders(apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined, given);
    const inner = createClient({ baseUrl: root, headers: base, fetch: (request) => send(defaults, request), ...rest });
    const perCall = (options) => options.timeout === undefined && options.retry === undefined ? undefined : transport({ timeout: options.timeout, retry: options.retry }, defaults);
    // Each method takes the call's own timeout and retry options beside openapi-fetch's.
    const client = { ...inner };
    for (const name of ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE']) {
        const call = inner[name];
        client[name] = (path, init = {}) => {
            const { timeout: t, retry: r, ...options } = init;
            const own = perCall({ timeout: t, retry: r });
            return call(path, own ? { ...options, fetch: (request) => send(own, request) } : options);
        };
    }
    client.request = ((method, path, init) => client[method.toUpperCase()](path, init));
    client.stream = async (path, body, init = {}) => {
        const { data, error, response } = await client.POST(path, {
            body: { ...body, stream: true },
            parseAs: 'stream',
            headers: mergeHeaders({ Accept: 'text/event-stream' }, init.headers === undefined ? undefined : new Headers(init.headers)),
            signal: init.signal,
            timeout: init.timeout,
            retry: init.retry,
        });
        if (error !== undefined || !response.ok)
            throw PlatformError.fromResponse(response, error);
        if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
            await data?.cancel();
            throw new PlatformError(`${path} answered ${response.headers.get('content-type')} rather than a stream of events`, {
                status: response.status,
                headers: response.headers,
            });
        }
        return new EventStream(response);
    };
    client.paginate = ((path, init = {}) => {
        async function* pages() {
            let query = { ...init.params?.query };
            for (;;) {
                const page = (await unwrap(client.GET(path, { ...init, params: { ...init.params, query } })));
                yield page;
                const cursor = page.next_cursor ?? page.next_page_token;
                const items = Object.values(page).find(Array.isArray);
                if (typeof cursor !== 'string' || cursor === '' || !items?.length)
                    return;
                query = { ...query, ['next_cursor' in page ? 'after' : 'page_token']: cursor };
            }
        }
        return {
            pages,
            async *[Symbol.asyncIterator]() {
                for await (const page of pages())
                    yield* Object.values(page).find(Array.isArray) ?? [];
            },
        };
    });
    client.upload = (async (path, form, init = {}) => {
        const body = await multipartBody(form);
        const headers = mergeHeaders(base, init.headers === undefined ? undefined : new Headers(init.headers), {
            'Content-Type': body.contentType,
            ...(body.length === undefined ? {} : { 'Content-Length': String(body.length) }),
        });
        const t = perCall(init) ?? defaults;
        const make = () => new Request(`${root}${path}`, { method: 'POST', headers, body: body.open(), duplex: 'half', signal: init.signal });
        const response = await send(t, make(), body.replayable ? make : null);
        const text = await response.text();
        let parsed = text;
        try {
            parsed = text ? JSON.parse(text) : undefined;
        }
        catch {
            // not JSON: kept as text
        }
        return response.ok ? { data: parsed, response } : { error: parsed, response };
    });
    return client;
}
