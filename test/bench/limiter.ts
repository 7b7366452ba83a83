// `npm run bench:limiter`: the rate limiter's own latency per request, without HTTP around it: a chat request's
// admission (token estimate, the counts, the limit) and its settlement (correction from usage, recent usage),
// one request at a time and 16 at a time, in memory and in Redis (REDIS_URL, default the local one), with limits
// too high to refuse anything. `npm run bench -- limiter` measures the same through the whole HTTP stack.
import { performance } from 'node:perf_hooks';
import { systemClock } from '../../server/core/clock.ts';
import { loadConfig } from '../../server/core/config.ts';
import type { Identity } from '../../server/core/identity.ts';
import { createLogger } from '../../server/core/log.ts';
import { Gate } from '../../server/http/rate-limits.ts';
import { RateLimits } from '../../server/limits/rate-limits.ts';

const N = Number(process.env.BENCH_LIMITER_REQUESTS ?? 20_000);
const body = {
  model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
  messages: [{ role: 'user', content: 'Say something short about rate limits.' }],
  max_tokens: 64,
};
const answer = { usage: { prompt_tokens: 9, completion_tokens: 40, total_tokens: 49 } };
const res = { setHeader: () => res } as never;
const identity = { organizationId: 'org_bench', projectSlug: 'default' } as Identity;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;

async function run(store: 'memory' | 'redis') {
  const config = {
    ...loadConfig({}).rateLimits,
    baseRequests: 1e9,
    maxRequests: 1e9,
    baseTokens: 1e12,
    maxTokens: 1e12,
    modelCapacity: 1e9,
    keyPrefix: `bench-limiter-${process.pid}-${store}`,
  };
  const limits = RateLimits.create(
    config,
    store === 'redis' ? (process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') : undefined,
    createLogger('silent'),
    systemClock,
  );
  await limits.ready();
  const one = async () => {
    const gate = new Gate(limits, identity, res);
    await gate.admit(body.model, body);
    gate.settle(answer);
  };
  // Warm-up: a few hundred requests left the figures several times their steady value (the JIT, the first windows).
  for (let i = 0; i < 2000; i++) await one();
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await one();
    times.push((performance.now() - t0) * 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  const t0 = performance.now();
  const cpu16 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = 0; i < N / 16; i++) await one();
    }),
  );
  const concurrentRate = N / ((performance.now() - t0) / 1000);
  const concurrentCpu = process.cpuUsage(cpu16);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  console.log(
    `RESULT limiter in ${store}: one at a time: mean ${mean.toFixed(0)} µs, p50 ${pct(times, 0.5).toFixed(0)} µs, p99 ${pct(times, 0.99).toFixed(0)} µs, ` +
      `CPU ${((cpu.user + cpu.system) / N).toFixed(0)} µs per request; 16 at a time: ${concurrentRate.toFixed(0)} requests/s, ` +
      `CPU ${((concurrentCpu.user + concurrentCpu.system) / N).toFixed(1)} µs per request`,
  );
  await limits.close();
}

await run('memory');
await run('redis');
