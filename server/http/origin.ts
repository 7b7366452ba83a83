// Where the caller reached this server: the origin of the absolute URLs it hands out (video outputs, upload URLs).
// Request headers decide it only when a proxy in front sets them (TRUST_PROXY: Express's `trust proxy` then reads
// X-Forwarded-Proto and X-Forwarded-Host, else Host); otherwise it is PUBLIC_BASE_URL, or else the address and port
// the caller's connection reached, never a header anyone can send.
import type { Request } from 'express';
import type { Config } from '../core/config.ts';

/** A host as a URL may carry it: a name or an address (IPv6 in brackets), with an optional port. */
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/i;

export function originOf(config: Pick<Config, 'trustProxy' | 'publicBaseUrl'>, req: Request): string {
  if (config.trustProxy) {
    const { protocol, host } = req;
    if ((protocol === 'http' || protocol === 'https') && host && HOST.test(host)) return `${protocol}://${host}`;
  }
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const address = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:(?=\d+\.)/, '');
  return `${'encrypted' in req.socket ? 'https' : 'http'}://${address.includes(':') ? `[${address}]` : address}:${req.socket.localPort}`;
}
