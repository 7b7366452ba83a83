// The control plane of one process: the guest the platform plugs in at start (platform.ts) when CONTROL_API is on.
// It brings the Control tag's operations (behind the control key), the pipeline's request observer (the journal) and
// fault policy (the fault rules), the engines' answer interceptors (the scripted answers), and reads the modules'
// hooks (`steer`, `fixtureSections`); no module knows it. Its state is the same in every process on the database
// (shared.ts): each change is made through `change`, and `load` applies whatever changed, wherever it was made.
import type { OffsetClock } from '../../core/clock.ts';
import type { Config } from '../../core/config.ts';
import { storedOffset } from '../../db/clock.ts';
import type { Database, Tx } from '../../db/index.ts';
import type { Notifications } from '../../db/notifications.ts';
import type { AnswerInterceptors } from '../../engines/intercept.ts';
import type { Services } from '../../http/context.ts';
import type { Guest } from '../../http/guests.ts';
import type { KeySetting } from '../../limits/rate-limits.ts';
import type { AnyModule, FixtureSections, Steerable } from '../types.ts';
import { Faults } from './faults.ts';
import { Journal } from './journal.ts';
import { isControlKey } from './key.ts';
import { scriptedAnswers } from './scripted.ts';
import { Scripts } from './scripts.ts';
import { readSetting, Shared, writeSetting } from './shared.ts';

export const CONTROL_PREFIX = '/_control/';

/** What a change clears in every process when it makes its epoch move. */
type Epoch = 'journal' | 'limits' | 'keys';
const EPOCHS: Epoch[] = ['journal', 'limits', 'keys'];
/** The settings holding the rate limits set (`limit:<organization>:<model>`), each a KeySetting with its id. */
export const LIMIT_PREFIX = 'limit:';
export type LimitSetting = KeySetting & { seq: string };

export interface ControlOptions {
  config: Config;
  /** The platform's services (the control plane moves the clock given here, and steers its runner). */
  services: Services;
  clock: OffsetClock;
  notifications: Notifications;
  /** The control key's hash. */
  keyHash: string;
  /** Forgets every cached key in this process (a reset or restore took keys away). */
  forgetKeys: () => void;
  /** The bootstrap (default organization, project, seeds, FIXTURES_FILE), run again by a platform reset. */
  reseed: () => Promise<unknown>;
  /** The platform's modules: the jobs they let the control plane steer, and the fixture sections they fill. */
  modules: readonly AnyModule[];
}

export class ControlPlane {
  readonly config: Config;
  readonly services: Services;
  readonly db: Database;
  readonly clock: OffsetClock;
  readonly journal: Journal;
  readonly faults: Faults;
  readonly scripts: Scripts;
  readonly shared: Shared;
  /** The jobs a control call can move, by kind (each module's `steer`). */
  readonly steerable: Record<string, Steerable>;
  /** The sections of a fixtures document's project, each filled by its module (`fixtureSections`). */
  readonly sections: FixtureSections;
  readonly reseed: () => Promise<unknown>;
  private readonly epochs = new Map<Epoch, string>();
  /** The rate-limit settings applied here, by key, and the id of each. */
  private readonly limitsApplied = new Map<string, string>();

  constructor(private readonly o: ControlOptions) {
    this.config = o.config;
    this.services = o.services;
    this.db = o.services.db;
    this.clock = o.clock;
    this.reseed = o.reseed;
    this.steerable = Object.assign({}, ...o.modules.map((m) => m.steer?.(o.services)));
    this.sections = Object.assign({}, ...o.modules.map((m) => m.fixtureSections));
    const now = () => o.clock.now();
    this.journal = new Journal(this.db, o.config.control.journalSize);
    const { baseRequests, baseTokens } = o.config.rateLimits;
    this.faults = new Faults(this.db, { requestLimit: baseRequests, tokenLimit: baseTokens }, () => this.creating, now);
    this.scripts = new Scripts(this.db, now);
    this.shared = new Shared(this.db, o.services.log, o.notifications, () => this.load());
  }

  /** The operations creating a job the control plane can fail (a fault rule's `fail_job`). */
  get creating(): Set<string> {
    return new Set(Object.values(this.steerable).flatMap((s) => s.creates));
  }

  /** What the pipeline plugs in: the control key's operations, the journal, the fault rules. */
  get guest(): Guest {
    return {
      prefix: CONTROL_PREFIX,
      accepts: (secret) => isControlKey(this.o.keyHash, secret),
      observer: this.journal.enabled ? { captures: true, observe: (r) => this.journal.add(r) } : undefined,
      faults: this.faults,
    };
  }

  /** What the engines ask before computing: the scripted answers. */
  get interceptors(): AnswerInterceptors {
    return scriptedAnswers(this.scripts);
  }

  start(): Promise<void> {
    return this.shared.start();
  }

  async close(): Promise<void> {
    await this.shared.close();
  }

  /** Commits a change of the shared state (moving `clears`' epochs), and answers once every process has applied it. */
  change<T>(fn: (tx: Tx) => Promise<T>, clears: Epoch[] = []): Promise<T> {
    return this.shared.change(async (tx) => {
      const result = await fn(tx);
      for (const epoch of clears) await writeSetting(tx, `epoch:${epoch}`, `${Date.now()}-${Math.random()}`);
      return result;
    });
  }

  /** Makes every process write down the journal it holds (a change that changes nothing else), so a read sees them all. */
  gatherJournal(): Promise<void> {
    return this.change(async () => {});
  }

  /** Applies the shared state in this process: what a change cleared, the journal written down, rules, limits, clock. */
  private async load(): Promise<void> {
    const { db } = this;
    const settings = await db.prisma.controlSetting.findMany();
    const value = (name: string) => settings.find((s) => s.name === name)?.value;
    const first = this.epochs.size === 0;
    const moved = new Set<Epoch>();
    for (const epoch of EPOCHS) {
      const now = value(`epoch:${epoch}`) ?? '';
      if (!first && this.epochs.get(epoch) !== now) moved.add(epoch);
      this.epochs.set(epoch, now);
    }
    // What this process holds of a journal that was cleared is gone with it; otherwise it is written down now.
    if (moved.has('journal')) this.journal.drop();
    else await this.journal.flush();
    if (moved.has('keys')) this.o.forgetKeys();
    const { limits } = this.services;
    if (moved.has('limits')) {
      await limits.clear(false);
      this.limitsApplied.clear();
    }
    await Promise.all([this.faults.store.load(), this.scripts.store.load()]);
    // Each key's setting: put in force; its window's counts written once (in memory by every process; in Redis, which
    // every process shares, by the process that set them: control/limits.ts).
    const set = new Map<string, LimitSetting>();
    for (const s of settings) if (s.name.startsWith(LIMIT_PREFIX)) set.set(s.name.slice(LIMIT_PREFIX.length), JSON.parse(s.value));
    for (const key of this.limitsApplied.keys()) if (!set.has(key)) await limits.apply(key, undefined, false);
    for (const [key, setting] of set) {
      const fresh = this.limitsApplied.get(key) !== setting.seq;
      await limits.apply(key, setting, fresh && !first && limits.store !== 'redis');
      this.limitsApplied.set(key, setting.seq);
    }
    for (const key of [...this.limitsApplied.keys()]) if (!set.has(key)) this.limitsApplied.delete(key);
    const offset = await storedOffset(db);
    if (offset > this.clock.offsetMs) this.clock.advance(offset - this.clock.offsetMs);
  }

  /** A key's rate-limit setting as stored. */
  limitSetting(tx: Tx, key: string): Promise<LimitSetting | undefined> {
    return readSetting<LimitSetting>(tx, `${LIMIT_PREFIX}${key}`);
  }
}
