import type { Client, ClientOptions } from 'openapi-fetch';
import type { components, paths } from './api.js';
export type { components, paths };
export type ErrorEnvelope = components['schemas']['ErrorData'];
export type PlatformClient = Client<paths>;
export interface PlatformClientOptions extends Omit<ClientOptions, 'baseUrl'> {
    /** The server's root address, e.g. `http://127.0.0.1:8080` (paths carry their `/v1` or `/v2`). */
    baseUrl: string;
    apiKey?: string;
}
export declare function createPlatformClient({ baseUrl, apiKey, headers, ...rest }: PlatformClientOptions): PlatformClient;
