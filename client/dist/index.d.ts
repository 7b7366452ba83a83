export type { components, operations, paths } from './api.js';
export { type CallOptions, createPlatformClient, type Page, type PagedPath, type PageItem, type Pages, type PlatformClient, type PlatformClientOptions, type StreamBody, type StreamEvent, type StreamPath, type UploadForm, type UploadPath, unwrap, } from './client.js';
export { type ControlClient, type ControlClientOptions, createControlClient } from './control.js';
export { type ErrorEnvelope, PlatformConnectionError, PlatformError, PlatformStreamError, PlatformTimeoutError } from './errors.js';
export { EventStream } from './events.js';
export { backoff, RETRIED_STATUSES, type RetryEvent, type RetryOptions, requestedWait, type TransportOptions } from './transport.js';
export type { FileSource } from './upload.js';
