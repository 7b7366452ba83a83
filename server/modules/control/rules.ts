// The control plane's rules as every process shares them (fault rules, scripted answers): rows of ControlRule, and
// in each process the copy it matches requests against, read again whenever the control plane's state changes
// (shared.ts). A rule's counts live in its row and are consumed by one conditional statement each, so a count is
// used once in total whichever process answers: a process whose copy is behind finds the row spent (or gone) and
// goes on as if the rule were not there.
import { iso } from '../../core/clock.ts';
import { notFound } from '../../core/errors.ts';
import type { Database, Tx } from '../../db/index.ts';

export type RuleKind = 'fault' | 'script';

export interface Rule<I> {
  id: string;
  input: I;
  /** Requests it acted on (a script: answers taken). */
  hits: number;
  /** Matching requests let through by a fault rule's `after`. */
  skipped: number;
  createdAt: number;
  expiresAt: number | null;
}

const ruleOf = <I>(row: { id: string; input: string; hits: number; skipped: number; createdAt: bigint; expiresAt: bigint | null }): Rule<I> => ({
  id: row.id,
  input: JSON.parse(row.input) as I,
  hits: row.hits,
  skipped: row.skipped,
  createdAt: Number(row.createdAt),
  expiresAt: row.expiresAt === null ? null : Number(row.expiresAt),
});

/** The times every rule's wire shape carries. */
export const timesWire = (r: Rule<unknown>) => ({ created_at: iso(r.createdAt), expires_at: r.expiresAt === null ? null : iso(r.expiresAt) });

export class RuleStore<I> {
  /** This process's copy, oldest first (what it matches against). */
  held: Rule<I>[] = [];

  constructor(
    private readonly db: Database,
    private readonly kind: RuleKind,
    /** What the rule's name is in a 404. */
    private readonly noun: string,
    private readonly param: string,
  ) {}

  /** Reads this kind's rules again (a load of the shared state). */
  async load(): Promise<void> {
    const rows = await this.db.prisma.controlRule.findMany({ where: { kind: this.kind }, orderBy: { id: 'asc' } });
    this.held = rows.map((r) => ruleOf<I>(r));
  }

  /** The rules in force now, as stored (with their counts now), oldest first. */
  async list(now: number, spent: (r: Rule<I>) => boolean = () => false): Promise<Rule<I>[]> {
    const rows = await this.db.prisma.controlRule.findMany({ where: { kind: this.kind }, orderBy: { id: 'asc' } });
    return rows.map((r) => ruleOf<I>(r)).filter((r) => (r.expiresAt === null || r.expiresAt > now) && !spent(r));
  }

  async get(id: string, now: number): Promise<Rule<I>> {
    const row = await this.db.prisma.controlRule.findFirst({ where: { id, kind: this.kind } });
    const rule = row && ruleOf<I>(row);
    if (!rule || (rule.expiresAt !== null && rule.expiresAt <= now)) throw notFound(this.noun, id, this.param);
    return rule;
  }

  insert(tx: Tx, rule: Rule<I>): Promise<unknown> {
    return tx.controlRule.create({
      data: {
        id: rule.id,
        kind: this.kind,
        input: JSON.stringify(rule.input),
        createdAt: BigInt(rule.createdAt),
        expiresAt: rule.expiresAt === null ? null : BigInt(rule.expiresAt),
      },
    });
  }

  async remove(tx: Tx, id: string): Promise<void> {
    const { count } = await tx.controlRule.deleteMany({ where: { id, kind: this.kind } });
    if (count === 0) throw notFound(this.noun, id, this.param);
  }

  /** Deletes every rule of this kind; answers how many were in force. */
  async clear(tx: Tx, now: number): Promise<number> {
    const live = await tx.controlRule.count({ where: { kind: this.kind, OR: [{ expiresAt: null }, { expiresAt: { gt: BigInt(now) } }] } });
    await tx.controlRule.deleteMany({ where: { kind: this.kind } });
    return live;
  }

  /**
   * The held rules in force at `now` (an expired one is dropped from the copy: a new array). Every request asks, so the
   * copy is looked through only when it was replaced or its first expiry has come.
   */
  inForce(now: number): Rule<I>[] {
    if (this.checked?.of === this.held && now < this.checked.until) return this.held;
    if (this.held.some((r) => r.expiresAt !== null && r.expiresAt <= now)) this.held = this.held.filter((r) => r.expiresAt === null || r.expiresAt > now);
    const until = this.held.reduce((first, r) => Math.min(first, r.expiresAt ?? Number.POSITIVE_INFINITY), Number.POSITIVE_INFINITY);
    this.checked = { of: this.held, until };
    return this.held;
  }
  /** The copy `inForce` last looked through, and when the first of its rules expires. */
  private checked?: { of: Rule<I>[]; until: number };

  /** Drops a rule from this process's copy (found spent or gone in its row). */
  forget(id: string): void {
    this.held = this.held.filter((r) => r.id !== id);
  }

  /** Counts one request let through by a fault rule's `after`, while fewer than `after` were: answers whether it did. */
  async skip(id: string, after: number): Promise<boolean> {
    const { count } = await this.db.writeStatement((c) =>
      c.controlRule.updateMany({ where: { id, skipped: { lt: after } }, data: { skipped: { increment: 1 } } }),
    );
    return count === 1;
  }

  /**
   * Counts one hit of a fault rule past its `after`, while it has hits left (`count`): answers whether it did (false:
   * none left, or gone). The rule whose last hit this was is deleted.
   */
  async hit(id: string, after: number, count: number | undefined): Promise<boolean> {
    const where = { id, skipped: { gte: after }, ...(count === undefined ? {} : { hits: { lt: count } }) };
    const { count: updated } = await this.db.writeStatement((c) => c.controlRule.updateMany({ where, data: { hits: { increment: 1 } } }));
    if (updated === 0) {
      this.forget(id);
      return false;
    }
    if (count !== undefined) {
      const { count: spent } = await this.db.writeStatement((c) => c.controlRule.deleteMany({ where: { id, hits: { gte: count } } }));
      if (spent) this.forget(id);
    }
    return true;
  }

  /** A script's hits now (null: gone). */
  async hitsOf(id: string): Promise<number | null> {
    const row = await this.db.prisma.controlRule.findUnique({ where: { id }, select: { hits: true } });
    if (!row) this.forget(id);
    return row?.hits ?? null;
  }

  /** Takes a script's answer number `hits` (the rule had taken `hits` before): false when another process took it first. */
  async take(id: string, hits: number): Promise<boolean> {
    const { count } = await this.db.writeStatement((c) => c.controlRule.updateMany({ where: { id, hits }, data: { hits: hits + 1 } }));
    return count === 1;
  }
}
