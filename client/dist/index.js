// The typed client package, `@inference-platform/client`: openapi-fetch over the contract's generated types, with
// what a caller of a production API needs around it (client.ts): retries with backoff that honour the platform's
// waits, a timeout per attempt and AbortSignal, typed streams of server-sent events, iteration over paged lists,
// streamed multipart uploads, an error class carrying the envelope; and the control plane's client (control.ts).
// `npm run generate` copies generated/api.d.ts to ./api.d.ts and builds dist/ from here.
//
//   const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', apiKey });
//   const { data, error } = await api.GET('/v1/whoami');   // error is typed as the envelope: error.error.code
//   const me = await unwrap(api.GET('/v1/whoami'));         // or the data, a PlatformError thrown otherwise
export { createPlatformClient, unwrap, } from './client.js';
export { createControlClient } from './control.js';
export { PlatformConnectionError, PlatformError, PlatformStreamError, PlatformTimeoutError } from './errors.js';
export { EventStream } from './events.js';
export { backoff, RETRIED_STATUSES, requestedWait } from './transport.js';
