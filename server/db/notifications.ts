// What PostgreSQL tells every server process (NOTIFY): one LISTEN connection per process for every channel the
// process subscribes to (key revocations, the control plane's changes), made again with backoff whenever it is lost.
// A subscriber is told when hearing starts and stops, since a notification sent while nobody listens is gone: it must
// then not trust what it holds (the key cache forgets every key; the control plane reads its state again). On SQLite
// there is nothing to hear: nothing connects, and subscribers are never told they hear.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from './index.ts';
import { pgConfig } from './urls.ts';

export interface Subscriber {
  notify(payload: string): void;
  /** Hearing (again): notifications from now on arrive. */
  up?(): void;
  /** Not hearing: notifications sent from now until `up` are lost. */
  down?(): void;
}

/** The first wait before reconnecting, doubled after each failed attempt up to the last. */
const RECONNECT_MS = [250, 500, 1000, 2000, 5000];
const CHANNEL = /^[a-z_]+$/;

export class Notifications {
  private readonly subscribers = new Map<string, Subscriber[]>();
  private client?: pg.Client;
  private retry?: NodeJS.Timeout;
  private closed = false;
  /** Whether notifications are being heard now. */
  hearing = false;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
  ) {}

  /** Subscribes to `channel` (before `start`). */
  on(channel: string, subscriber: Subscriber): void {
    if (!CHANNEL.test(channel)) throw new Error(`channel ${channel} is not a plain name`);
    this.subscribers.set(channel, [...(this.subscribers.get(channel) ?? []), subscriber]);
  }

  /** On PostgreSQL: the first connection must succeed (the start fails otherwise); one lost later is made again. */
  async start(): Promise<void> {
    if (this.db.provider !== 'postgresql' || this.closed || this.subscribers.size === 0) return;
    await this.connect();
  }

  private each(fn: (s: Subscriber) => void): void {
    for (const list of this.subscribers.values()) for (const s of list) fn(s);
  }

  private async connect(): Promise<void> {
    // The driver is loaded only on PostgreSQL (SQLite, the default, never needs it).
    const { default: driver } = await import('pg');
    const client = new driver.Client({ ...pgConfig(this.db.url), connectionTimeoutMillis: 5000, keepAlive: true });
    let established = false;
    const lost = (err?: Error) => {
      // Before LISTEN succeeded, connect()'s rejection reports the failure; a lost connection is reported once.
      if (!established) return;
      established = false;
      this.hearing = false;
      if (this.client === client) this.client = undefined;
      this.each((s) => s.down?.());
      void client.end().catch(() => {});
      if (this.closed) return;
      this.log.warn({ err: err?.message ?? 'connection ended' }, 'notification listener lost; reconnecting');
      this.reconnect(0);
    };
    client.on('notification', (msg) => {
      for (const s of this.subscribers.get(msg.channel) ?? []) s.notify(msg.payload ?? '');
    });
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query([...this.subscribers.keys()].map((channel) => `LISTEN ${channel}`).join('; '));
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) return void (await client.end().catch(() => {}));
    established = true;
    this.client = client;
    this.hearing = true;
    this.each((s) => s.up?.());
  }

  private reconnect(attempt: number): void {
    const wait = RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]!;
    this.retry = setTimeout(() => {
      this.connect().then(
        () => this.log.info({ attempts: attempt + 1 }, 'notification listener reconnected'),
        (err) => {
          if (attempt === 0) this.log.warn({ err: (err as Error).message }, 'notification listener cannot reconnect yet; retrying');
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
    await this.client?.end().catch(() => {});
  }
}
