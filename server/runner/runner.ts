// The durable runner: the one mechanism for work that progresses over time. Work items live in the database with a
// scheduled time, a lease, a heartbeat and an attempt number:
// - claiming is one statement (FOR UPDATE SKIP LOCKED on PostgreSQL; inside the serialized write transaction on
//   SQLite) that takes due items, or items whose lease ran out, and bumps their attempt;
// - while a handler works, a heartbeat extends the lease; a process killed mid-item simply stops heartbeating, and
//   another takes the item over once the lease has run out;
// - a handler's outcome is committed together with a check that the item still holds the attempt it was claimed
//   with (fencing), so a worker whose lease was taken over cannot complete the newer attempt, and its writes roll back.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { RunnerConfig } from '../core/config.ts';
import { newId } from '../core/ids.ts';
import type { Database, Tx } from '../db/index.ts';

export interface WorkItemInput {
  kind: string;
  subjectId: string;
  projectId?: string | null;
  payload?: unknown;
  /** Run this long from now (0: as soon as a worker is free). */
  delayMs?: number;
}

export interface ClaimedItem {
  id: string;
  kind: string;
  subjectId: string;
  projectId: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: each work kind reads its own payload shape.
  payload: any;
  attempt: number;
  failures: number;
}

/** What a handler asks the runner to commit: its writes, and whether the item runs again later. */
export interface Step {
  apply?: (tx: Tx) => Promise<void>;
  /** Run the same item again after this delay (the next step of a state machine); absent: the item is done. */
  againInMs?: number;
  payload?: unknown;
}

export interface WorkHandler {
  run(item: ClaimedItem): Promise<Step>;
  /** Called (fenced, in the same transaction) when an item has failed `maxFailures` times and is given up. */
  giveUp?(item: ClaimedItem, error: string, tx: Tx): Promise<void>;
}

export class Fenced extends Error {
  constructor(item: ClaimedItem) {
    super(`work item ${item.id} attempt ${item.attempt} lost its lease`);
  }
}

/** The row of a new work item: what a statement that inserts one itself (a claim's timeout check) writes. */
export function workItemRow(clock: Clock, input: Omit<WorkItemInput, 'subjectId' | 'payload'>) {
  const now = clock.now();
  return {
    id: newId('work', now),
    kind: input.kind,
    projectId: input.projectId ?? null,
    state: 'queued',
    runAt: BigInt(now + (input.delayMs ?? 0)),
    createdAt: BigInt(now),
    updatedAt: BigInt(now),
  };
}

/**
 * An error the work a request schedules is to fail with (a fault rule's `fail_job`, control/faults.ts): set around
 * the operation, it is written into the payload of every item the operation enqueues, in the same transaction as
 * the job itself, so no worker can take the job's first step before it is marked (runner/progress.ts reads it).
 */
export const failingWork = new AsyncLocalStorage<{ code: string; message: string }>();

/** Schedules work inside the caller's transaction, so a resource and the work that moves it commit together. */
export async function enqueue(tx: Tx, clock: Clock, input: WorkItemInput): Promise<string> {
  const row = workItemRow(clock, input);
  const fail = failingWork.getStore();
  const payload = fail ? { ...(input.payload as object), fail } : (input.payload ?? {});
  await tx.workItem.create({ data: { ...row, subjectId: input.subjectId, payload: JSON.stringify(payload) } });
  return row.id;
}

const RETURNED = `"id", "kind", "subjectId", "projectId", "payload", "attempt", "failures"`;

export class Runner {
  readonly owner = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private handlers = new Map<string, WorkHandler>();
  private inflight = new Map<string, Promise<void>>();
  private timer?: NodeJS.Timeout;
  private stopping = false;
  private polling?: Promise<void>;
  /** Whether the last claim filled every free place: more items may be due now. */
  private backlog = false;

  constructor(
    private db: Database,
    private clock: Clock,
    private config: RunnerConfig,
    private log: Logger,
  ) {}

  register(kind: string, handler: WorkHandler): this {
    this.handlers.set(kind, handler);
    return this;
  }

  start(): void {
    if (!this.config.enabled || this.timer) return;
    this.schedule(0);
  }

  /** The next poll in `ms` (replacing a later one already scheduled); one poll at a time. */
  private schedule(ms: number): void {
    if (this.stopping || this.polling) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.polling = this.poll()
        .catch((err) => {
          this.log.error({ err }, 'runner poll failed');
          return false;
        })
        .then((more) => {
          this.polling = undefined;
          this.backlog = more;
          // Places freed while this poll ran are filled at once when more may be due.
          this.schedule(more && this.inflight.size < this.config.batch ? 0 : this.config.pollMs);
        });
    }, ms);
  }

  /** Stops claiming and waits for the items in hand. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.polling;
    await Promise.allSettled(this.inflight.values());
  }

  /** Runs every item that is due now, and whatever they make due now, until none is left. For tests and tools. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.claim(this.config.batch);
      if (claimed.length === 0 && this.inflight.size === 0) return total;
      total += claimed.length;
      await Promise.all([...claimed.map((item) => this.process(item)), ...this.inflight.values()]);
    }
  }

  /**
   * Claims as many items as there are free places (one statement) and starts them; answers whether there may be
   * more due (every place asked for was filled). While there may be, a finished item's place is filled at once
   * rather than at the next poll: a backlog is drained as fast as the items run, not `batch` items per poll period.
   */
  private async poll(): Promise<boolean> {
    const free = this.config.batch - this.inflight.size;
    if (free <= 0) return true;
    const items = await this.claim(free);
    for (const item of items) {
      const run = this.process(item).finally(() => {
        this.inflight.delete(item.id);
        if (this.backlog) this.schedule(0);
      });
      this.inflight.set(item.id, run);
    }
    return items.length === free;
  }

  /** When the earliest queued item of a registered kind is due, if one is due by `until`; null otherwise. */
  async nextDueAt(until: number): Promise<number | null> {
    const first = await this.db.prisma.workItem.findFirst({
      where: { state: 'queued', runAt: { lte: BigInt(until) }, kind: { in: [...this.handlers.keys()] } },
      orderBy: { runAt: 'asc' },
      select: { runAt: true },
    });
    return first ? Number(first.runAt) : null;
  }

  /**
   * Makes one subject's queued items of `kind` due now and runs them (the control plane's steered step); answers how
   * many ran, or null when none could be taken because a worker holds one (its lease has not run out).
   */
  async runNow(kind: string, subjectId: string): Promise<number | null> {
    const now = BigInt(this.clock.now());
    await this.db.write((tx) => tx.workItem.updateMany({ where: { kind, subjectId, state: 'queued' }, data: { runAt: now } }));
    const claimed = await this.claim(this.config.batch, { kind, subjectId });
    await Promise.all(claimed.map((item) => this.process(item)));
    if (claimed.length > 0) return claimed.length;
    return (await this.db.prisma.workItem.count({ where: { kind, subjectId, state: 'running' } })) > 0 ? null : 0;
  }

  /** Takes up to `limit` due items (or items whose lease expired) for this worker; `only`: of one kind and subject. */
  async claim(limit: number, only?: { kind: string; subjectId: string }): Promise<ClaimedItem[]> {
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0 || limit <= 0) return [];
    const now = this.clock.now();
    const leaseUntil = now + this.config.leaseMs;
    const pg = this.db.provider === 'postgresql';
    // One placeholder per occurrence, values in order of appearance: SQLite's `?` takes the next value each time.
    const args: unknown[] = [];
    const p = (value: unknown) => {
      args.push(value);
      return pg ? `$${args.length}` : '?';
    };
    const sql = `UPDATE "WorkItem" SET "state" = 'running', "attempt" = "attempt" + 1, "leaseOwner" = ${p(this.owner)},
        "leaseUntil" = ${p(leaseUntil)}, "heartbeatAt" = ${p(now)}, "updatedAt" = ${p(now)}
      WHERE "id" IN (
        SELECT "id" FROM "WorkItem"
        WHERE (("state" = 'queued' AND "runAt" <= ${p(now)}) OR ("state" = 'running' AND "leaseUntil" < ${p(now)}))
          AND "kind" IN (${kinds.map((k) => p(k)).join(', ')})${only ? ` AND "kind" = ${p(only.kind)} AND "subjectId" = ${p(only.subjectId)}` : ''}
        ORDER BY "runAt", "id" LIMIT ${p(limit)}${pg ? ' FOR UPDATE SKIP LOCKED' : ''})
      RETURNING ${RETURNED}`;
    // One statement, atomic on its own: on PostgreSQL no transaction around it (two round trips fewer per claim).
    // biome-ignore lint/suspicious/noExplicitAny: raw rows, read by column below.
    const rows = await this.db.writeStatement((c) => c.$queryRawUnsafe<any[]>(sql, ...args));
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      subjectId: r.subjectId,
      projectId: r.projectId,
      payload: JSON.parse(r.payload),
      attempt: Number(r.attempt),
      failures: Number(r.failures),
    }));
  }

  /** Runs one claimed item: the handler, then its fenced commit; a failure is retried with backoff, then given up. */
  async process(item: ClaimedItem): Promise<void> {
    const handler = this.handlers.get(item.kind)!;
    const heartbeat = setInterval(() => void this.heartbeat(item).catch(() => {}), Math.max(50, this.config.leaseMs / 3));
    try {
      const step = await handler.run(item);
      await this.commit(item, step);
    } catch (err) {
      if (err instanceof Fenced) return void this.log.warn({ item: item.id, attempt: item.attempt }, err.message);
      await this.fail(item, handler, err).catch((e) => this.log.warn({ err: e, item: item.id }, 'work item failure not recorded'));
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async heartbeat(item: ClaimedItem): Promise<void> {
    const now = this.clock.now();
    await this.db.write((tx) =>
      tx.workItem.updateMany({
        where: { id: item.id, attempt: item.attempt, state: 'running' },
        data: { leaseUntil: BigInt(now + this.config.leaseMs), heartbeatAt: BigInt(now), updatedAt: BigInt(now) },
      }),
    );
  }

  /**
   * Commits a step if, and only if, the item still holds the attempt it was claimed with. A step without writes of
   * its own is that one fenced statement (on PostgreSQL outside a transaction: two round trips fewer).
   */
  async commit(item: ClaimedItem, step: Step): Promise<void> {
    const now = this.clock.now();
    const again = step.againInMs !== undefined;
    const fenced = (client: Tx) =>
      client.workItem.updateMany({
        where: { id: item.id, attempt: item.attempt, state: 'running' },
        data: {
          state: again ? 'queued' : 'done',
          runAt: again ? BigInt(now + step.againInMs!) : undefined,
          payload: step.payload === undefined ? undefined : JSON.stringify(step.payload),
          failures: 0,
          leaseOwner: null,
          leaseUntil: null,
          updatedAt: BigInt(now),
        },
      });
    if (!step.apply) {
      if ((await this.db.writeStatement(fenced)).count === 0) throw new Fenced(item);
      return;
    }
    await this.db.write(async (tx) => {
      if ((await fenced(tx)).count === 0) throw new Fenced(item);
      await step.apply!(tx);
    });
  }

  private async fail(item: ClaimedItem, handler: WorkHandler, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    const failures = item.failures + 1;
    const givingUp = failures >= this.config.maxFailures;
    this.log.warn({ err, item: item.id, kind: item.kind, failures, givingUp }, 'work item failed');
    const now = this.clock.now();
    await this.db.write(async (tx) => {
      const { count } = await tx.workItem.updateMany({
        where: { id: item.id, attempt: item.attempt, state: 'running' },
        data: {
          state: givingUp ? 'failed' : 'queued',
          failures,
          lastError: message.slice(0, 1000),
          // Exponential backoff: 1 s, 2 s, 4 s, ... capped at a minute.
          runAt: givingUp ? undefined : BigInt(now + Math.min(60_000, 1000 * 2 ** (failures - 1))),
          leaseOwner: null,
          leaseUntil: null,
          updatedAt: BigInt(now),
        },
      });
      if (count === 0) throw new Fenced(item);
      if (givingUp) await handler.giveUp?.(item, message, tx);
    });
  }
}
