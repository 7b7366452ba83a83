// The typed client: openapi-fetch over the generated `paths`. Import it as `@inference-platform/client`.
// `npm run generate` copies generated/api.d.ts to ./api.d.ts and builds dist/ from here.
//
//   const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', apiKey });
//   const { data, error } = await api.GET('/v1/whoami');   // error is typed as the envelope: error.error.code

import type { Client, ClientOptions } from 'openapi-fetch';
import createClient, { mergeHeaders } from 'openapi-fetch';
import type { components, paths } from './api.js';

export type { components, paths };
export type ErrorEnvelope = components['schemas']['ErrorData'];
export type PlatformClient = Client<paths>;

export interface PlatformClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** The server's root address, e.g. `http://127.0.0.1:8080` (paths carry their `/v1` or `/v2`). */
  baseUrl: string;
  apiKey?: string;
}

export function createPlatformClient({ baseUrl, apiKey, headers, ...rest }: PlatformClientOptions): PlatformClient {
  // `headers` may be any form fetch takes: a Headers instance and a list of pairs are read as fetch reads them
  // (openapi-fetch's merge reads only plain objects); a plain object keeps openapi-fetch's rules (null removes a
  // header, a list repeats it). Headers given here win over the key's Authorization.
  const given = headers instanceof Headers || Array.isArray(headers) ? new Headers(headers) : headers;
  return createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: mergeHeaders(apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined, given),
    ...rest,
  });
}
