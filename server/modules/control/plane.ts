// What the control plane keeps in each process: its key's hash, the journal and the fault rules, how to bootstrap
// again after a platform reset, and the rate limiter it reads, sets and clears. The HTTP pipeline (server/http/app.ts) records into the journal and asks
// the faults; the Control tag's handlers read and change them.
import type { Config } from '../../core/config.ts';
import type { RateLimits } from '../../limits/rate-limits.ts';
import { Faults } from './faults.ts';
import { Journal } from './journal.ts';
import { isControlKey } from './key.ts';

export class ControlPlane {
  readonly journal: Journal;
  readonly faults: Faults;

  constructor(
    config: Pick<Config, 'control' | 'rateLimits'>,
    /** The control key's hash; null: the control plane is off. */
    private readonly keyHash: string | null,
    /** The bootstrap (default organization, project, seeds), run again by a platform reset. */
    readonly reseed: () => Promise<unknown>,
    readonly limits: RateLimits,
  ) {
    this.journal = new Journal(keyHash === null ? 0 : config.control.journalSize);
    this.faults = new Faults({ requestLimit: config.rateLimits.baseRequests, tokenLimit: config.rateLimits.baseTokens });
  }

  get enabled(): boolean {
    return this.keyHash !== null;
  }

  accepts(secret: string): boolean {
    return this.keyHash !== null && isControlKey(this.keyHash, secret);
  }
}
