// Bearer authentication for every API route (/v1, /v2, and the requirements' /fine-tunes; but the operations a signed
// URL authorises: app.ts), before anything else looks at the request. Keys are looked up by hash through a short-lived
// cache, so most requests cost no database round trip; a revocation clears the entry at once in this process and, on
// PostgreSQL, in every process (LISTEN/NOTIFY: db/notifications.ts; while it is not heard nothing is cached). On
// SQLite a key revoked by another process (the CLI) stops working when its cache entry expires (KEY_CACHE_TTL_MS).
import type { NextFunction, Request, RequestHandler } from 'express';
import type { Clock } from '../core/clock.ts';
import { apiError } from '../core/errors.ts';
import { hashKey, type Identity } from '../core/identity.ts';
import type { Database } from '../db/index.ts';
import { identityForHash, KEY_REVOKED_CHANNEL } from '../db/keys.ts';
import type { Notifications } from '../db/notifications.ts';

declare module 'express-serve-static-core' {
  interface Request {
    identity?: Identity;
  }
}

export class KeyCache {
  private entries = new Map<string, { identity: Identity; expires: number }>();
  /** On PostgreSQL: whether revocations are being heard now. Only then is a looked-up key cached. */
  private hearing = false;

  constructor(
    private db: Database,
    private clock: Clock,
    private ttlMs: number,
    notifications: Notifications,
  ) {
    // A revocation made while nobody listens goes unheard: every cached key is forgotten when hearing stops, and
    // none is cached until it starts again.
    notifications.on(KEY_REVOKED_CHANNEL, {
      notify: (hash) => this.evict(hash),
      up: () => {
        this.entries.clear();
        this.hearing = true;
      },
      down: () => {
        this.hearing = false;
        this.entries.clear();
      },
    });
  }

  /** The identity of a key, without waiting when it is cached (most requests): a promise only when it is looked up. */
  resolve(secret: string): Identity | Promise<Identity | null> {
    const hash = hashKey(secret);
    const hit = this.entries.get(hash);
    if (hit && hit.expires > this.clock.now()) return hit.identity;
    return this.lookUp(hash);
  }

  private async lookUp(hash: string): Promise<Identity | null> {
    const identity = await identityForHash(this.db, hash);
    // On PostgreSQL a cached key relies on hearing its revocation: while the listener is down, nothing is cached.
    if (identity && (this.db.provider !== 'postgresql' || this.hearing)) this.entries.set(hash, { identity, expires: this.clock.now() + this.ttlMs });
    else this.entries.delete(hash);
    return identity;
  }

  evict(hash: string): void {
    this.entries.delete(hash);
  }

  /** Forgets every key (keys were taken away by something other than a revocation: a reset, a restore). */
  clear(): void {
    this.entries.clear();
  }
}

/**
 * The key an `Authorization` header carries: undefined when there is none (no header, or `Bearer` alone: 401
 * `missing_api_key`), null when the header is not a bearer key (401 `invalid_api_key`).
 */
export function bearerKey(header: string | undefined): string | null | undefined {
  if (!header || /^Bearer\s*$/i.test(header)) return undefined;
  return header.match(/^Bearer[ \t]+(\S+)\s*$/i)?.[1] ?? null;
}

export function authenticate(keys: KeyCache): RequestHandler {
  const admit = (req: Request, next: NextFunction, identity: Identity | null) => {
    if (!identity) throw apiError(401, 'invalid_api_key', 'The API key provided is not valid.');
    req.identity = identity;
    next();
  };
  // A cached key is admitted in the same step; only a lookup waits.
  return (req, _res, next) => {
    const key = bearerKey(req.headers.authorization);
    if (key === undefined) {
      throw apiError(401, 'missing_api_key', "You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.");
    }
    const identity = key !== null && key.length <= 256 ? keys.resolve(key) : null;
    if (identity instanceof Promise) return identity.then((found) => admit(req, next, found));
    admit(req, next, identity);
  };
}
