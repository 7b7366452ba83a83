// What the control plane keeps in each process: its key's hash, the journal, the fault rules and scripted answers,
// how to bootstrap again after a platform reset, the clock it moves and the rate limiter it reads, sets and clears.
// The HTTP pipeline (server/http/app.ts) records into the journal and asks
// the faults; the Control tag's handlers read and change them.
import type { OffsetClock } from '../../core/clock.ts';
import type { Config } from '../../core/config.ts';
import type { RateLimits } from '../../limits/rate-limits.ts';
import type { Steerable } from '../types.ts';
import { Faults } from './faults.ts';
import { Journal } from './journal.ts';
import { isControlKey } from './key.ts';
import { Scripts } from './scripts.ts';

export class ControlPlane {
  readonly journal: Journal;
  readonly faults: Faults;
  /** Scripted answers (scripts.ts), asked where each capability calls its engine (scripted.ts). */
  readonly scripts = new Scripts();
  /** The jobs a control call can move, by kind (each module's `steer`), set once the services exist. */
  steerable: Record<string, Steerable> = {};
  /** Drops a key from this process's key cache (set by the platform's start), when a restore takes the key away. */
  forgetKey: (hash: string) => void = () => {};

  constructor(
    config: Pick<Config, 'control' | 'rateLimits'>,
    /** The control key's hash; null: the control plane is off. */
    private readonly keyHash: string | null,
    /** The bootstrap (default organization, project, seeds), run again by a platform reset. */
    readonly reseed: () => Promise<unknown>,
    /** The platform's clock, which `advanceTime` moves forward. */
    readonly clock: OffsetClock,
    /** The rate limiter, which the rate-limit operations read and set and a platform reset clears. */
    readonly limits: RateLimits,
  ) {
    this.journal = new Journal(keyHash === null ? 0 : config.control.journalSize);
    this.faults = new Faults({ requestLimit: config.rateLimits.baseRequests, tokenLimit: config.rateLimits.baseTokens }, () => this.creating);
  }

  /** The operations creating a job the control plane can fail (a fault rule's `fail_job`). */
  get creating(): Set<string> {
    return new Set(Object.values(this.steerable).flatMap((s) => s.creates));
  }

  get enabled(): boolean {
    return this.keyHash !== null;
  }

  accepts(secret: string): boolean {
    return this.keyHash !== null && isControlKey(this.keyHash, secret);
  }
}
