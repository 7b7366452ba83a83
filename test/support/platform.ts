// The test kit every test file uses: a whole platform on a fresh database (seeded exactly as a first start seeds
// it), a manual clock moved by `advance` (which also runs whatever work became due), logs captured in memory, and
// callers: `caller` (the default project, with the first-start key) and `other` (a project of another organization),
// or as many more as a test makes with `newCaller`. Each caller acts as its project through `api` (the typed client)
// or `http` (supertest with its key set). `restart()` stops the platform and starts it again on the same database
// and clock, as a process restart would; callers keep working.
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import supertest from 'supertest';
import { createApiKey, createOrganization, createProject } from '../../server/accounts.ts';
import { ManualClock } from '../../server/core/clock.ts';
import { type Config, loadConfig } from '../../server/core/config.ts';
import { hashKey, type Identity } from '../../server/core/identity.ts';
import { createLogger } from '../../server/core/log.ts';
import { identityForHash } from '../../server/db/keys.ts';
import type { FixtureKit } from '../../server/modules/types.ts';
import { type Platform, startPlatform } from '../../server/platform.ts';
import { type ScratchDatabase, scratchDatabase } from './database.ts';

export interface Caller {
  key: string;
  identity: Identity;
  /** The typed client, with this caller's key. */
  api: PlatformClient;
  /** supertest on the running server, with this caller's key on every request. */
  http: ReturnType<typeof supertest.agent>;
}

export interface TestPlatformOptions {
  config?: Partial<Config>;
  /** The database to start on (default: PostgreSQL when TEST_DATABASE_URL is set, else SQLite). */
  database?: 'sqlite' | 'postgresql';
  /** An existing database to start on instead of a fresh scratch one (left in place on close). */
  databaseUrl?: string;
  runner?: Partial<Config['runner']>;
}

export class TestPlatform {
  readonly clock = new ManualClock();
  /** Every log line written so far, as text (across restarts). */
  readonly logs: string[] = [];
  platform!: Platform;
  caller!: Caller;
  other!: Caller;
  private callers: Caller[] = [];

  private constructor(
    private readonly scratch: ScratchDatabase,
    readonly config: Config,
  ) {}

  static async start(options: TestPlatformOptions = {}): Promise<TestPlatform> {
    const scratch = options.databaseUrl ? { url: options.databaseUrl, drop: async () => {} } : await scratchDatabase(options.database);
    const base = loadConfig({});
    const config: Config = {
      ...base,
      port: 0,
      databaseUrl: scratch.url,
      dataDir: mkdtempSync(join(tmpdir(), 'platform-data-')),
      logLevel: 'info',
      control: { ...base.control, key: TEST_CONTROL_KEY },
      // Rate-limit windows follow the platform's clock, which stands still in a test unless moved: limits no test meets
      // by accident (the tests of the limits set their own).
      rateLimits: { ...base.rateLimits, ...UNMET_LIMITS },
      ...options.config,
      runner: { ...base.runner, enabled: false, ...options.runner },
    };
    const t = new TestPlatform(scratch, config);
    await t.boot();
    t.caller = await t.callerFor(t.platform.firstKey!);
    // The tests have the key, as a reader of the server's first line would: a restart after the development key's
    // grace period (time the tests' clock passes) must not replace it.
    await t.platform.announced();
    t.other = await t.newCaller();
    return t;
  }

  private async boot(): Promise<void> {
    const sink = new Writable({
      write: (chunk, _enc, done) => {
        this.logs.push(String(chunk));
        done();
      },
    });
    const observations = process.env.CONTRACT_OBSERVATIONS;
    this.platform = await startPlatform(this.config, {
      clock: this.clock,
      log: createLogger(this.config.logLevel, sink),
      observe: observations ? (op, status) => op && appendFileSync(observations, `${op} ${status}\n`) : undefined,
    });
    for (const c of this.callers) this.connect(c);
  }

  get url(): string {
    return this.platform.url!;
  }

  get services(): Platform['services'] {
    return this.platform.services;
  }

  /** supertest on the running server, without a key. */
  get http() {
    return supertest(this.url);
  }

  /** The default project's typed client. */
  get api(): PlatformClient {
    return this.caller.api;
  }

  private connect(c: Caller): void {
    // Without retries or a timeout: the tests see each answer as the platform gave it (a 429 or 503 is what they
    // assert), however long a loaded machine takes.
    c.api = createPlatformClient({ baseUrl: this.url, apiKey: c.key, retry: false, timeout: 0 });
    c.http = supertest.agent(this.url).set('Authorization', `Bearer ${c.key}`);
  }

  private async callerFor(key: string): Promise<Caller> {
    const c = { key, identity: (await identityForHash(this.services.db, hashKey(key)))! } as Caller;
    this.connect(c);
    this.callers.push(c);
    return c;
  }

  /** A caller with a new key: in `projectId`, or in a new project of a new organization. */
  async newCaller(projectId?: string): Promise<Caller> {
    const { db } = this.services;
    if (!projectId) {
      const org = await createOrganization(db, this.clock, 'Other Organization');
      projectId = (await createProject(db, this.clock, { organizationId: org.id, name: 'Other Project' })).id;
    }
    return this.callerFor((await createApiKey(db, this.clock, { projectId, name: 'test' })).secret);
  }

  /** Moves the clock forward and runs every work item that became due. */
  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await this.services.runner.drain();
  }

  /** Stops the platform and starts it again on the same database and clock. */
  async restart(): Promise<void> {
    await this.platform.close();
    await this.boot();
  }

  /** What a module's fixtures need to act as `owner`. */
  fixtureKit(owner: Caller): FixtureKit {
    return { services: this.services, owner: { key: owner.key, projectId: owner.identity.projectId, api: owner.api }, advance: (ms) => this.advance(ms) };
  }

  /**
   * Makes every database call fail until the returned function is called: with an unexpected error (for the
   * documented 500s), or with `error` (e.g. the driver's own outage error, test/support/outage-error.ts).
   */
  breakDatabase(error?: unknown): () => void {
    const db = this.services.db;
    const { prisma, write } = db;
    const fail = () => {
      throw error ?? new Error('database is down (injected by the test)');
    };
    db.prisma = new Proxy({}, { get: () => new Proxy(fail, { get: () => fail }) }) as typeof prisma;
    db.write = async () => fail();
    return () => Object.assign(db, { prisma, write });
  }

  async close(): Promise<void> {
    await this.platform.close();
    await this.scratch.drop();
    rmSync(this.config.dataDir, { recursive: true, force: true });
  }
}

/** Rate limits high enough that no test meets them unless it sets its own. */
export const UNMET_LIMITS = { baseRequests: 1_000_000, maxRequests: 1_000_000, baseTokens: 1e9, maxTokens: 1e9, modelCapacity: 1_000_000 };

/** The control key every test platform takes (CONTROL_KEY), as a test suite would set it. */
export const TEST_CONTROL_KEY = 'ctl_test-control-key-0123456789';

export const startTestPlatform = (options: TestPlatformOptions = {}) => TestPlatform.start(options);

/** How user-given URLs are fetched when the tests' own servers (on 127.0.0.1) stand for the public ones: `config: { urlFetch: localUrls }`. */
export const localUrls = loadConfig({ URL_FETCH_ALLOW_HOSTS: '127.0.0.1' }).urlFetch;
