// One control state for every server process on the database. The rules, the journal, the rate limits set and the
// clock's offset live in the database; each process holds a copy of what it reads on every request (the rules, the
// limits) and applies a change when it sees the control plane's version move. A change commits with a new version,
// is applied in the process that made it, and answers once every live process has applied it too: what a control
// call set holds on every process by the time it answers (a process that stopped answering for STALE_MS is not
// waited for). Processes hear of a new version by PostgreSQL's NOTIFY at once, and poll for it every POLL_MS
// (SQLite, where nothing notifies, and PostgreSQL while its listener is down); on SQLite a poll reads the version only
// when something was committed since the last read (`db.commits()`), since a read through Prisma 20 times a second
// was most of what the control plane cost an idle server (15 of its 17 ms of CPU a second, measured). Liveness is
// wall-clock time, not the platform's clock: the platform's clock jumps when a test moves it.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Mutex } from 'async-mutex';
import type { Logger } from 'pino';
import type { Database, Tx } from '../../db/index.ts';
import type { Notifications } from '../../db/notifications.ts';

export const CONTROL_CHANNEL = 'control_changed';
const VERSION = 'version';
/** How often a process looks for a new version (and, every few times, says it is alive). */
const POLL_MS = 50;
const ALIVE_EVERY = 20;
/** A process not heard of for this long is not waited for (killed, or frozen). */
const STALE_MS = 5_000;
/** The longest a change waits for the other processes, then answers anyway (and says which lag). */
const BARRIER_MS = 5_000;

export class Shared {
  readonly id = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private applied = -1;
  private readonly mutex = new Mutex();
  private timer?: NodeJS.Timeout;
  private polls = 0;
  private closed = false;
  /** `db.commits()` when the state was last read: while it stays, nothing was committed and a poll reads nothing. */
  private seen?: number;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    notifications: Notifications,
    /** Reads the state again and applies it in this process (`version`: the version it is read at). */
    private readonly load: (version: number) => Promise<void>,
  ) {
    // Heard before the start (the listener connects first), a change is read by the start itself.
    const heard = () => void (this.timer && this.refresh().catch(() => {}));
    notifications.on(CONTROL_CHANNEL, { notify: heard, up: heard });
  }

  /** Registers this process, applies the state, and starts looking for changes. */
  async start(): Promise<void> {
    const now = Date.now();
    await this.db.write(async (tx) => {
      await tx.$executeRaw`INSERT INTO "ControlSetting" ("name", "value") VALUES (${VERSION}, '0') ON CONFLICT ("name") DO NOTHING`;
      // Processes gone for a minute are forgotten.
      await tx.controlProcess.deleteMany({ where: { aliveAt: { lt: BigInt(now - 60_000) } } });
      await tx.controlProcess.create({ data: { id: this.id, version: 0, aliveAt: BigInt(now), startedAt: BigInt(now) } });
    });
    await this.refresh(true);
    this.tick();
  }

  private tick(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      const alive = ++this.polls % ALIVE_EVERY === 0;
      if (!alive && this.seen !== undefined && this.db.commits() === this.seen) return this.tick();
      this.refresh(alive)
        .catch((err) => this.log.debug({ err: String(err) }, 'control plane: state not read'))
        .finally(() => this.tick());
    }, POLL_MS);
    this.timer.unref();
  }

  /** The version now, as committed. */
  private async version(client: Pick<Tx, '$queryRaw'> = this.db.prisma): Promise<number> {
    const rows = await client.$queryRaw<{ value: string }[]>`SELECT "value" FROM "ControlSetting" WHERE "name" = ${VERSION}`;
    return Number(rows[0]?.value ?? 0);
  }

  /** Applies the state if its version moved (one application at a time), and says so (`alive`: says so anyway). */
  private refresh(alive = false): Promise<void> {
    return this.mutex.runExclusive(async () => {
      // Taken before the read: a commit made during it moves the number again, and the next poll reads.
      const commits = this.db.commits();
      const version = await this.version();
      const moved = version > this.applied;
      if (moved) {
        await this.load(version);
        this.applied = version;
      }
      this.seen = commits;
      if (!moved && !alive) return;
      await this.db.writeStatement((c) =>
        c.controlProcess.upsert({
          where: { id: this.id },
          create: { id: this.id, version: this.applied, aliveAt: BigInt(Date.now()), startedAt: BigInt(Date.now()) },
          update: { version: this.applied, aliveAt: BigInt(Date.now()) },
        }),
      );
    });
  }

  /**
   * Commits `change` with a new version, applies it here, and answers once every live process has applied it. A
   * change that only asks every process to write down what it holds (the journal before a read) changes nothing else.
   */
  async change<T>(change: (tx: Tx) => Promise<T>): Promise<T> {
    const [result, version] = await this.db.write(async (tx) => {
      const result = await change(tx);
      // One statement, so two changes at once get two versions (PostgreSQL locks the row until the commit).
      const rows = await tx.$queryRaw<{ value: string }[]>`
        UPDATE "ControlSetting" SET "value" = CAST(CAST("value" AS INTEGER) + 1 AS TEXT) WHERE "name" = ${VERSION} RETURNING "value"`;
      const version = Number(rows[0]!.value);
      if (this.db.provider === 'postgresql') await tx.$executeRawUnsafe(`SELECT pg_notify('${CONTROL_CHANNEL}', $1)`, String(version));
      return [result, version] as const;
    });
    await this.refresh();
    await this.barrier(version);
    return result;
  }

  /** Waits until every live process has applied `version` (or BARRIER_MS has passed). */
  private async barrier(version: number): Promise<void> {
    const deadline = Date.now() + BARRIER_MS;
    for (let wait = 2; ; wait = Math.min(wait * 2, POLL_MS)) {
      const behind = await this.db.prisma.controlProcess.findMany({
        where: { id: { not: this.id }, version: { lt: version }, aliveAt: { gt: BigInt(Date.now() - STALE_MS) } },
        select: { id: true },
      });
      if (behind.length === 0) return;
      if (Date.now() > deadline) {
        this.log.warn({ processes: behind.map((p) => p.id), version }, 'control plane: a change answers before every process has applied it');
        return;
      }
      await sleep(wait);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.mutex.waitForUnlock();
    await this.db.writeStatement((c) => c.controlProcess.deleteMany({ where: { id: this.id } })).catch(() => {});
  }
}

/** A setting of the shared state (a JSON value), read in a change's transaction or for a load. */
export async function readSetting<T>(client: Pick<Tx, 'controlSetting'>, name: string): Promise<T | undefined> {
  const row = await client.controlSetting.findUnique({ where: { name } });
  return row ? (JSON.parse(row.value) as T) : undefined;
}

export async function writeSetting(tx: Tx, name: string, value: unknown): Promise<void> {
  const text = JSON.stringify(value);
  await tx.controlSetting.upsert({ where: { name }, create: { name, value: text }, update: { value: text } });
}
