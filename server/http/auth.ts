// Bearer authentication for every API route (/v1, /v2, and the requirements' /fine-tunes; but the operations a signed
// URL authorises: app.ts), before anything else looks at the request. Keys are looked up by hash through a short-lived cache, so most requests cost
// no database round trip; a revocation clears the entry at once in this process and, on PostgreSQL, in every
// process (LISTEN/NOTIFY, on a connection of its own that is made again whenever it is lost, and while it is
// down nothing is cached). On SQLite a key revoked by another process (the CLI) stops working when its cache entry
// expires (KEY_CACHE_TTL_MS).
import type { RequestHandler } from 'express';
import type pg from 'pg';
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

/** The first wait before reconnecting the revocation listener, doubled after each failed attempt up to the last. */
const RECONNECT_MS = [250, 500, 1000, 2000, 5000];

export class KeyCache {
  private entries = new Map<string, { identity: Identity; expires: number }>();
  private listener?: pg.Client;
  /** On PostgreSQL: whether revocations are being heard now. Only then is a looked-up key cached. */
  private hearing = false;
  private retry?: NodeJS.Timeout;
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
    // On PostgreSQL a cached key relies on hearing its revocation: while the listener is down, nothing is cached.
    if (identity && (this.db.provider !== 'postgresql' || this.hearing)) this.entries.set(hash, { identity, expires: this.clock.now() + this.ttlMs });
    else this.entries.delete(hash);
    return identity;
  }

  evict(hash: string): void {
    this.entries.delete(hash);
  }

  /**
   * On PostgreSQL: hear about revocations made by any process. The first connection must succeed (the start
   * fails otherwise); a connection lost later (the database restarted, the network cut) is made again, with
   * backoff, for as long as the cache is open.
   */
  async listen(): Promise<void> {
    if (this.db.provider !== 'postgresql' || this.closed) return;
    await this.connect();
  }

  private async connect(): Promise<void> {
    // The driver is loaded only on PostgreSQL (SQLite, the default, never needs it).
    const { default: pgDriver } = await import('pg');
    const client = new pgDriver.Client({ ...pgConfig(this.db.url), connectionTimeoutMillis: 5000, keepAlive: true });
    let established = false;
    const lost = (err?: Error) => {
      // Before LISTEN succeeded, connect()'s rejection reports the failure; a lost connection is reported once.
      if (!established) return;
      established = false;
      // A revocation made while nobody listens goes unheard: forget every cached key, and cache none until heard again.
      this.hearing = false;
      this.entries.clear();
      if (this.listener === client) this.listener = undefined;
      void client.end().catch(() => {});
      if (this.closed) return;
      this.log.warn({ err: err?.message ?? 'connection ended' }, 'key revocation listener lost; reconnecting');
      this.reconnect(0);
    };
    client.on('notification', (msg) => msg.payload && this.evict(msg.payload));
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${KEY_REVOKED_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) return void (await client.end().catch(() => {}));
    established = true;
    this.listener = client;
    // Keys cached before the listener was down are gone; any cached since were not (nothing is cached meanwhile).
    this.entries.clear();
    this.hearing = true;
  }

  private reconnect(attempt: number): void {
    const wait = RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]!;
    this.retry = setTimeout(() => {
      this.connect().then(
        () => this.log.info({ attempts: attempt + 1 }, 'key revocation listener reconnected'),
        (err) => {
          if (attempt === 0) this.log.warn({ err: (err as Error).message }, 'key revocation listener cannot reconnect yet; retrying');
          if (!this.closed) this.reconnect(attempt + 1);
        },
      );
    }, wait);
    this.retry.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.hearing = false;
    await this.listener?.end().catch(() => {});
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
  return async (req, _res, next) => {
    const key = bearerKey(req.headers.authorization);
    if (key === undefined) {
      throw apiError(401, 'missing_api_key', "You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.");
    }
    const identity = key !== null && key.length <= 256 ? await keys.resolve(key) : null;
    if (!identity) throw apiError(401, 'invalid_api_key', 'The API key provided is not valid.');
    req.identity = identity;
    next();
  };
}
