// Where the caller reached this server: the origin of the absolute URLs it is given (video outputs, upload URLs),
// from the request's Host (and X-Forwarded-Proto, behind a TLS-terminating proxy).
import type { IncomingHttpHeaders } from 'node:http';

export const originOf = (headers: IncomingHttpHeaders) => `${String(headers['x-forwarded-proto'] ?? 'http').split(',')[0]}://${headers.host}`;
