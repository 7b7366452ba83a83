// The control plane's client: what a test suite calls to steer the platform (the spec's Control tag, paths under
// `/_control/`), typed from the same generated types as the API, authenticated by the control key. Every method
// answers the operation's data and throws a PlatformError on a refusal.
//
//   const control = createControlClient({ baseUrl, controlKey });
//   await control.fault({ match: { operations: ['createChatCompletion'] }, status: 429, count: 1 });
//   await control.reset();
import { createPlatformClient, unwrap } from './client.js';
export function createControlClient({ controlKey, ...options }) {
    const api = createPlatformClient({ ...options, apiKey: controlKey });
    // The paths are typed; the bodies are checked by the signatures above.
    const body = (b) => ({ body: b });
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
