// Bearer authentication for every API route (/v1, /v2, and the requirements' /fine-tunes; but the operations a signed
// URL authorises: app.ts), before anything else looks at the request. Keys are looked up by hash through a short-lived cache, so most requests cost
// no database round trip; a revocation clears the entry at once in this process and, on PostgreSQL, in every
// process (LISTEN/NOTIFY). On SQLite a key revoked by another process (the CLI) stops working when its cache entry
// expires (KEY_CACHE_TTL_MS).
import type { RequestHandler } from 'express';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { apiError } from '../core/errors.ts';
import { hashKey, type Identity } from '../core/identity.ts';
import type { Database } from '../db/index.ts';
import { identityForHash, KEY_REVOKED_CHANNEL } from '../db/keys.ts';
import { pgConfig } from '../db/urls.ts';

declare module 'express-serve-static-core' {
  interface Request {
    identity?: Identity;
  }
}

export class KeyCache {
  private entries = new Map<string, { identity: Identity; expires: number }>();
  private listener?: pg.Client;
  private closed = false;

  constructor(
    private db: Database,
    private clock: Clock,
    private ttlMs: number,
    private log: Logger,
  ) {}

  async resolve(secret: string): Promise<Identity | null> {
    const hash = hashKey(secret);
    const hit = this.entries.get(hash);
    if (hit && hit.expires > this.clock.now()) return hit.identity;
    const identity = await identityForHash(this.db, hash);
    if (identity) this.entries.set(hash, { identity, expires: this.clock.now() + this.ttlMs });
    else this.entries.delete(hash);
    return identity;
  }

  evict(hash: string): void {
    this.entries.delete(hash);
  }

  /** On PostgreSQL: hear about revocations made by any process. */
  async listen(): Promise<void> {
    if (this.db.provider !== 'postgresql' || this.closed) return;
    const client = new pg.Client(pgConfig(this.db.url));
    client.on('notification', (msg) => msg.payload && this.evict(msg.payload));
    client.on('error', (err) => {
      // Without the channel a revocation could go unheard: forget everything, then listen again.
      this.log.warn({ err }, 'key revocation listener lost; reconnecting');
      this.entries.clear();
      this.listener = undefined;
      setTimeout(() => void this.listen().catch(() => {}), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${KEY_REVOKED_CHANNEL}`);
    this.listener = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.listener?.end().catch(() => {});
  }
}

export function authenticate(keys: KeyCache): RequestHandler {
  return async (req, _res, next) => {
    const header = req.headers.authorization;
    const match = header?.match(/^Bearer[ \t]+(\S+)\s*$/i);
    if (!header || /^Bearer\s*$/i.test(header)) {
      throw apiError(401, 'missing_api_key', "You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.");
    }
    const identity = match && match[1].length <= 256 ? await keys.resolve(match[1]) : null;
    if (!identity) throw apiError(401, 'invalid_api_key', 'The API key provided is not valid.');
    req.identity = identity;
    next();
  };
}
