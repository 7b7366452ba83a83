// Starts a whole platform for a test file: fresh database (seeded exactly as a first start seeds it), a manual
// clock, the runner driven by the test (`drain()`), logs captured in memory, and two callers in two projects of
// two organizations: `api` (the default project, with the first-start key) and `other`.
import { appendFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import supertest from 'supertest';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import { createApiKey, createOrganization, createProject, identityForHash, hashKey, type Identity } from '../../server/accounts.ts';
import { ManualClock } from '../../server/clock.ts';
import { loadConfig, type Config } from '../../server/config.ts';
import { createLogger } from '../../server/log.ts';
import { startPlatform, type Platform } from '../../server/platform.ts';
import { scratchDatabase } from './database.ts';

export interface Caller {
  key: string;
  identity: Identity;
  api: PlatformClient;
}

export interface TestPlatform {
  url: string;
  clock: ManualClock;
  platform: Platform;
  services: Platform['services'];
  /** The default project's caller (the first-start key). */
  caller: Caller;
  /** A caller in another organization's project. */
  other: Caller;
  api: PlatformClient;
  http: ReturnType<typeof supertest>;
  /** Every log line written so far, as text. */
  logs: string[];
  /** Moves the clock forward and runs every work item that became due. */
  advance(ms: number): Promise<void>;
  newCaller(projectId?: string): Promise<Caller>;
  /** Makes every database call fail until `restore()` (for the documented 500s). */
  breakDatabase(): () => void;
  close(): Promise<void>;
}

export async function startTestPlatform(overrides: { config?: Partial<Config>; runner?: Partial<Config['runner']> } = {}): Promise<TestPlatform> {
  const scratch = await scratchDatabase();
  const base = loadConfig({});
  const config: Config = {
    ...base,
    port: 0,
    databaseUrl: scratch.url,
    logLevel: 'info',
    ...overrides.config,
    runner: { ...base.runner, enabled: false, ...overrides.runner },
  };
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const clock = new ManualClock();
  const observations = process.env.CONTRACT_OBSERVATIONS;
  const platform = await startPlatform(config, {
    clock,
    log: createLogger(config.logLevel, sink),
    observe: observations ? (op, status) => op && appendFileSync(observations, `${op} ${status}\n`) : undefined,
  });
  const { services } = platform;
  const url = platform.url!;

  const callerFor = async (key: string): Promise<Caller> => ({
    key,
    identity: (await identityForHash(services.db, hashKey(key)))!,
    api: createPlatformClient({ baseUrl: url, apiKey: key }),
  });
  const caller = await callerFor(platform.firstKey!);
  const newCaller = async (projectId?: string) => {
    if (!projectId) {
      const org = await createOrganization(services.db, clock, 'Other Organization');
      projectId = (await createProject(services.db, clock, { organizationId: org.id, name: 'Other Project' })).id;
    }
    return callerFor((await createApiKey(services.db, clock, { projectId, name: 'test' })).secret);
  };
  const other = await newCaller();

  return {
    url,
    clock,
    platform,
    services,
    caller,
    other,
    api: caller.api,
    http: supertest(url),
    logs,
    advance: async (ms) => {
      clock.advance(ms);
      await services.runner.drain();
    },
    newCaller,
    breakDatabase: () => {
      const db = services.db;
      const { prisma, write } = db;
      const fail = () => {
        throw new Error('database is down (injected by the test)');
      };
      db.prisma = new Proxy({}, { get: () => new Proxy(fail, { get: () => fail }) }) as any;
      db.write = async () => fail();
      return () => Object.assign(db, { prisma, write });
    },
    close: async () => {
      await platform.close();
      await scratch.drop();
    },
  };
}
