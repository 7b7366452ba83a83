// What the control plane keeps in each process: its key's hash, the journal and the fault rules, and how to
// bootstrap again after a platform reset. The HTTP pipeline (server/http/app.ts) records into the journal and asks
// the faults; the Control tag's handlers read and change them.
import type { Config } from '../../core/config.ts';
import { Faults } from './faults.ts';
import { Journal } from './journal.ts';
import { isControlKey } from './key.ts';

export class ControlPlane {
  readonly journal: Journal;
  readonly faults: Faults;
  /** Drops a key from this process's key cache (set by the platform's start), when a restore takes the key away. */
  forgetKey: (hash: string) => void = () => {};

  constructor(
    config: Pick<Config, 'control' | 'rateLimits'>,
    /** The control key's hash; null: the control plane is off. */
    private readonly keyHash: string | null,
    /** The bootstrap (default organization, project, seeds), run again by a platform reset. */
    readonly reseed: () => Promise<unknown>,
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
