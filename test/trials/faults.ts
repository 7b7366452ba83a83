// The fault campaign of issue 28: what once held the server, sent to a real server process while /healthz is asked
// every 20 ms beside it (its latency is the figure: a held event loop shows as a slow health check).
// - schemas: response_format schemas at and past the bounds (an enum of 900,000 values, a required of 900,000 names,
//   900 properties and 1,000 objects), six at once;
// - redis: steady chat traffic at 80% of its rate limit while the limiter's Redis is frozen (SIGSTOP), then thawed:
//   each request's wait (at most RATE_LIMIT_REDIS_TIMEOUT_MS on Redis, the first requests of the freeze included)
//   and the 429s during and after it (none: the process counts alone meanwhile, and nothing it counted lands in Redis
//   afterwards);
// - images: four 2048x2048 requests of n = 4 at once, then one alone (rendered on worker threads).
// Used by `npm run trials` (test/trials/run.ts, TRIALS=faults).
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { scratchDatabase } from '../support/database.ts';
import { startServerProcess } from '../support/server-process.ts';
import { startPrivateRedis } from './outage.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const IMAGE = 'black-forest-labs/FLUX.1-schnell';

export interface Latencies {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

const latencies = (ms: number[]): Latencies => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0);
  return { count: s.length, p50: at(0.5), p99: at(0.99), max: Math.round(s.at(-1) ?? 0) };
};

export interface CaseFigures {
  /** Each request sent, by kind: its statuses and its latencies. */
  requests: Record<string, { statuses: Record<string, number>; ms: Latencies }>;
  /** /healthz, asked every 20 ms while the case ran. */
  healthz: Latencies;
}

function client(url: string, key: string | undefined) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const call = (method: string, path: string, body?: string): Promise<{ status: number; ms: number }> =>
    new Promise((resolve) => {
      const started = performance.now();
      const req = http.request(
        `${url}${path}`,
        {
          method,
          agent,
          headers: {
            ...(key ? { Authorization: `Bearer ${key}` } : {}),
            ...(body ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } : {}),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
          res.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
        },
      );
      req.setTimeout(60_000, () => req.destroy());
      req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
      req.end(body);
    });
  return { call, close: () => agent.destroy() };
}

/** Runs `work` while /healthz is asked every 20 ms on a connection of its own; answers both figures. */
async function besideHealth(url: string, work: (record: (kind: string, r: { status: number; ms: number }) => void) => Promise<void>): Promise<CaseFigures> {
  const health = client(url, undefined);
  const seen: number[] = [];
  let running = true;
  const prober = (async () => {
    while (running) {
      const r = await health.call('GET', '/healthz');
      seen.push(r.ms);
      await sleep(20);
    }
  })();
  const requests: Record<string, number[]> = {};
  const statuses: Record<string, Record<string, number>> = {};
  try {
    await work((kind, r) => {
      requests[kind] ??= [];
      requests[kind].push(r.ms);
      statuses[kind] ??= {};
      statuses[kind][r.status] = (statuses[kind][r.status] ?? 0) + 1;
    });
  } finally {
    running = false;
    await prober;
    health.close();
  }
  return {
    requests: Object.fromEntries(Object.entries(requests).map(([k, ms]) => [k, { statuses: statuses[k]!, ms: latencies(ms) }])),
    healthz: latencies(seen),
  };
}

const chatWith = (schema: unknown) =>
  JSON.stringify({
    model: CHAT,
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 8,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
  });

/** Case 1: schemas past the bounds in 9 MB bodies (two at once), then large ones within them (six at once). */
export async function schemaCase(): Promise<{ large: CaseFigures; within: CaseFigures }> {
  const db = await scratchDatabase();
  const server = await startServerProcess({ DATABASE_URL: db.url, RATE_LIMITS: 'off' });
  const api = client(server.url, server.key);
  const properties = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string' }]));
  const bodies: Record<string, string> = {
    'enum of 900,000': chatWith({ type: 'string', enum: Array.from({ length: 900_000 }, (_, i) => `v${i}`) }),
    'required of 900,000': chatWith({ type: 'object', required: Array.from({ length: 900_000 }, (_, i) => `k${i}`) }),
    '900 properties': chatWith({ type: 'object', properties: properties(900), required: Object.keys(properties(900)) }),
    '998 properties (1,000 objects)': chatWith({ type: 'object', properties: properties(998) }),
  };
  try {
    await api.call('POST', '/v1/chat/completions', bodies['900 properties']); // the worker threads started
    const together = (kinds: string[]) => (record: (kind: string, r: { status: number; ms: number }) => void) =>
      Promise.all(kinds.map(async (kind) => record(kind, await api.call('POST', '/v1/chat/completions', bodies[kind])))).then(() => {});
    // The 9 MB bodies (parsed, checked, refused in one pass over the schema) apart from the large schemas within the
    // bounds (compiled and sampled on a worker thread), so that each figure is its own.
    return {
      large: await besideHealth(server.url, together(['enum of 900,000', 'required of 900,000'])),
      within: await besideHealth(
        server.url,
        together(['900 properties', '900 properties', '900 properties', '900 properties', '998 properties (1,000 objects)', '998 properties (1,000 objects)']),
      ),
    };
  } finally {
    api.close();
    await server.stop('SIGTERM');
    await db.drop();
  }
}

/** Case 4: images at the limits, four at once and then one alone. */
export async function imageCase(): Promise<CaseFigures> {
  const db = await scratchDatabase();
  const server = await startServerProcess({ DATABASE_URL: db.url, RATE_LIMITS: 'off' });
  const api = client(server.url, server.key);
  const body = (format: string, responseFormat: string) =>
    JSON.stringify({
      model: IMAGE,
      prompt: 'a red fox in the snow',
      width: 2048,
      height: 2048,
      n: 4,
      steps: 50,
      output_format: format,
      response_format: responseFormat,
    });
  try {
    await api.call('POST', '/v1/images/generations', JSON.stringify({ model: IMAGE, prompt: 'warm up', width: 64, height: 64 }));
    return await besideHealth(server.url, async (record) => {
      await Promise.all(
        [
          ['4 at once: png, base64', body('png', 'base64')],
          ['4 at once: jpeg, url', body('jpeg', 'url')],
          ['4 at once: png, base64', body('png', 'base64')],
          ['4 at once: jpeg, base64', body('jpeg', 'base64')],
        ].map(async ([kind, b]) => record(kind!, await api.call('POST', '/v1/images/generations', b))),
      );
      record('alone: png, base64', await api.call('POST', '/v1/images/generations', body('png', 'base64')));
    });
  } finally {
    api.close();
    await server.stop('SIGTERM');
    await db.drop();
  }
}

export interface RedisFigures extends CaseFigures {
  timeoutMs: number;
  /** Chat requests sent before, during and after the freeze, and the 429s among them. */
  phases: Record<'before' | 'frozen' | 'after', { requests: number; refused: number; slowestMs: number }>;
}

/**
 * Case 2: chat at 80% of its limit (`limit` requests per 1 s window) through a frozen Redis: `frozenMs` frozen, then
 * as long again thawed.
 */
export async function redisCase(options: { frozenMs: number; limit?: number; timeoutMs?: number }): Promise<RedisFigures | null> {
  const redis = await startPrivateRedis();
  if (!redis) return null;
  const limit = options.limit ?? 50;
  const timeoutMs = options.timeoutMs ?? 1000;
  const db = await scratchDatabase();
  const server = await startServerProcess({
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    RATE_LIMIT_BASE_REQUESTS: String(limit),
    RATE_LIMIT_MAX_REQUESTS: String(limit),
    RATE_LIMIT_REDIS_TIMEOUT_MS: String(timeoutMs),
    RATE_LIMIT_QUEUE_SIZE: '0',
  });
  const api = client(server.url, server.key);
  const body = JSON.stringify({ model: CHAT, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
  const phases: RedisFigures['phases'] = {
    before: { requests: 0, refused: 0, slowestMs: 0 },
    frozen: { requests: 0, refused: 0, slowestMs: 0 },
    after: { requests: 0, refused: 0, slowestMs: 0 },
  };
  let phase: keyof typeof phases = 'before';
  try {
    // Warm (the first requests load the tokenizer and compile the validators): a cold start's backlog would be
    // refused in a burst, and that is not what is measured.
    for (let i = 0; i < 20; i++) await api.call('POST', '/v1/chat/completions', body);
    await sleep(1_500);
    const figures = await besideHealth(server.url, async (record) => {
      let sending = true;
      // 80% of the limit: one request every 1000 / (0.8 x limit) ms, each on its own (not waiting for the last).
      const every = 1000 / (0.8 * limit);
      const inFlight: Promise<void>[] = [];
      const sender = (async () => {
        for (let next = performance.now(); sending; next += every) {
          const at = phase;
          inFlight.push(
            api.call('POST', '/v1/chat/completions', body).then((r) => {
              record(`chat (${at})`, r);
              const p = phases[at];
              p.requests++;
              if (r.status === 429) p.refused++;
              p.slowestMs = Math.max(p.slowestMs, Math.round(r.ms));
            }),
          );
          await sleep(Math.max(0, next + every - performance.now()));
        }
      })();
      await sleep(options.frozenMs);
      phase = 'frozen';
      redis.child.kill('SIGSTOP');
      await sleep(options.frozenMs);
      redis.child.kill('SIGCONT');
      phase = 'after';
      await sleep(options.frozenMs);
      sending = false;
      await sender;
      await Promise.all(inFlight);
    });
    return { ...figures, timeoutMs, phases };
  } finally {
    redis.child.kill('SIGCONT');
    api.close();
    await server.stop('SIGTERM');
    redis.child.kill('SIGKILL');
    await db.drop();
  }
}
