// The typed client package, `@inference-platform/client`: openapi-fetch over the contract's generated types, with
// what a caller of a production API needs around it (client.ts): retries with backoff that honour the platform's
// waits, a timeout per attempt and AbortSignal, typed streams of server-sent events, iteration over paged lists,
// streamed multipart uploads, an error class carrying the envelope; and the control plane's client (control.ts).
// `npm run generate` copies generated/api.d.ts to ./api.d.ts and builds dist/ from here.
//
//   const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', apiKey });
//   const { data, error } = await api.GET('/v1/whoami');   // error is typed as the envelope: error.error.code
//   const me = await unwrap(api.GET('/v1/whoami'));         // or the data, a PlatformError thrown otherwise

export type { components, operations, paths } from './api.js';
export {
  type CallOptions,
  createPlatformClient,
  type Page,
  type PagedPath,
  type PageItem,
  type Pages,
  type PlatformClient,
  type PlatformClientOptions,
  type StreamBody,
  type StreamEvent,
  type StreamPath,
  type UploadForm,
  type UploadPath,
  unwrap,
} from './client.js';
export { type ControlClient, type ControlClientOptions, createControlClient } from './control.js';
export { type ErrorEnvelope, PlatformConnectionError, PlatformError, PlatformStreamError, PlatformTimeoutError } from './errors.js';
export { EventStream } from './events.js';
export { backoff, RETRIED_STATUSES, type RetryEvent, type RetryOptions, requestedWait, type TransportOptions } from './transport.js';
export type { FileSource } from './upload.js';
