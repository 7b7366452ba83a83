// Two server processes (as `npm start` runs them) on one database: sharing one Redis they enforce one limit per
// organization x model, so requests spread over both are refused exactly as if one process had taken them all;
// without Redis each process counts alone (the control). Each run counts under a key prefix of its own.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ScratchDatabase, scratchDatabase } from './support/database.ts';
import { limitedOperations } from './support/rate-limited.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const LIMIT = 10;
const PER_PROCESS = 15;
// No queue, and a limit that cannot grow, in a window that does not end during any test run: every count is exact.
// (Windows are aligned on the clock: with a window of 300 s, a run that crossed a multiple of 5 minutes counted
// afresh in the new window, and served one request too many, seen under load. This one ends in 2033.)
const LIMITS = {
  RATE_LIMIT_BASE_REQUESTS: String(LIMIT),
  RATE_LIMIT_MAX_REQUESTS: String(LIMIT),
  RATE_LIMIT_WINDOW_SECONDS: '1000000000',
  RATE_LIMIT_QUEUE_SIZE: '0',
  RUNNER_ENABLED: 'false',
};
const PREFIX = `procs-${randomUUID()}`;
const { model } = limitedOperations.createChatCompletion!;

let db: ScratchDatabase;
let key: string;
const started: ServerProcess[] = [];

async function pair(env: Record<string, string>): Promise<[ServerProcess, ServerProcess]> {
  const a = await startServerProcess({ DATABASE_URL: db.url, ...LIMITS, ...env });
  started.push(a);
  key ??= a.key!;
  const b = await startServerProcess({ DATABASE_URL: db.url, ...LIMITS, ...env });
  started.push(b);
  return [a, b];
}

/** Sends PER_PROCESS chat completions through each process, alternating; answers the statuses. */
async function drive(servers: ServerProcess[]): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < PER_PROCESS; i++) {
    for (const s of servers) {
      const res = await fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8 }),
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
  }
  return statuses;
}
const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

beforeAll(async () => {
  db = await scratchDatabase();
});
afterAll(async () => {
  for (const s of started) await s.stop();
  await db?.drop();
  // The window's counters would otherwise live as long as it.
  const redis = new Redis(REDIS_URL);
  for await (const keys of redis.scanStream({ match: `${PREFIX}:*` }) as AsyncIterable<string[]>) if (keys.length) await redis.unlink(...keys);
  await redis.quit();
});

describe('two server processes', () => {
  test('sharing Redis, they enforce one limit: 30 requests, 10 served, 20 refused with 429', async () => {
    const servers = await pair({ REDIS_URL, RATE_LIMIT_KEY_PREFIX: PREFIX });
    const statuses = await drive(servers);
    expect(count(statuses, 200)).toBe(LIMIT);
    expect(count(statuses, 429)).toBe(2 * PER_PROCESS - LIMIT);
    await Promise.all(servers.map((s) => s.stop()));
  });

  test('without Redis, each process counts alone: 20 served, 10 refused', async () => {
    const servers = await pair({ REDIS_URL: '' });
    const statuses = await drive(servers);
    expect(count(statuses, 200)).toBe(2 * LIMIT);
    expect(count(statuses, 429)).toBe(2 * (PER_PROCESS - LIMIT));
  });
});
