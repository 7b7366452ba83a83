// The requests `npm run bench` measures through the whole stack, each against a bare Express route that answers the
// same body from memory (test/bench/bare.ts). A target is either a ratio of throughputs (whole stack / bare, the
// median of alternating rounds) or a latency (p50 through the whole stack).
export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  target: { ratio?: number; p50Ms?: number };
  /**
   * Environment of the whole-stack server for this scenario (a server of its own is started for each distinct one).
   * The rate limits are off unless it turns them on (RATE_LIMITS=on).
   */
  env?: Record<string, string>;
  /** Another scenario (same request, other server settings) this one's cost is reported against: "ADDED" lines. */
  baseline?: string;
}

// The rate limiter's own cost: the same chat completion with the limiter off, in memory and in Redis, with limits
// too high to refuse anything (so every request goes the whole way through the limiter's counting).
const chat = { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', messages: [{ role: 'user', content: 'Say something short about rate limits.' }], max_tokens: 64 };
const unlimited = {
  RATE_LIMITS: 'on',
  RATE_LIMIT_BASE_REQUESTS: '1000000000',
  RATE_LIMIT_MAX_REQUESTS: '1000000000',
  RATE_LIMIT_BASE_TOKENS: '1000000000000',
  RATE_LIMIT_MAX_TOKENS: '1000000000000',
  RATE_LIMIT_MODEL_CAPACITY: '1000000000',
};
const limiter = (name: string, env: Record<string, string>, baseline?: string): Scenario => ({
  name: `limiter: chat, ${name}`,
  method: 'POST',
  path: '/v1/chat/completions',
  body: chat,
  target: { ratio: 0.3 },
  env,
  baseline,
});

export const scenarios: Scenario[] = [
  { name: 'whoami', method: 'GET', path: '/v1/whoami', target: { ratio: 0.65 } },
  { name: 'hardware (1.7 KB list)', method: 'GET', path: '/v1/hardware', target: { ratio: 0.5 } },
  limiter('limits off', { RATE_LIMITS: 'off' }),
  limiter('limits in memory', { ...unlimited, REDIS_URL: '' }, 'limiter: chat, limits off'),
  limiter('limits in Redis', { ...unlimited, REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', RATE_LIMIT_KEY_PREFIX: `bench-${process.pid}` }, 'limiter: chat, limits off'),
];
