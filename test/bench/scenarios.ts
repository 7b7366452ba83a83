// The requests `npm run bench` measures through the whole stack, each against a bare Express route that answers the
// same body from memory (test/bench/bare.ts). A target is either a ratio of throughputs (whole stack / bare, the
// median of alternating rounds) or a latency (p50 through the whole stack).
import { experimentModel, plainModel, seedExperiments } from './experiments.ts';
import { LIST_ROWS, seedLists } from './lists.ts';

export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  target: { ratio?: number; p50Ms?: number };
  /** Concurrent connections (default BENCH_CONNECTIONS, 16). A latency target is one request's time, so it is
   * measured with 1: with 16 at once, p50 is mostly the wait behind the other 15. */
  connections?: number;
  /**
   * Environment of the whole-stack server for this scenario (a server of its own is started for each distinct one).
   * The rate limits are off unless it turns them on (RATE_LIMITS=on).
   */
  env?: Record<string, string>;
  /** Another scenario (same request, other server settings) this one's cost is reported against: "ADDED" lines. */
  baseline?: string;
  /** At most this much more CPU per request than `baseline` (a share: 0.05 is 5%). */
  maxAdded?: number;
  /** Prepares the server's data before the first request (e.g. writes rows into its database). */
  setup?: (server: BenchServer) => Promise<void>;
}

/** The whole-stack server a scenario runs on. */
export interface BenchServer {
  url: string;
  auth: Record<string, string>;
  /** Its database's URL. */
  database: string;
}

const withLists = (server: BenchServer) => seedLists(server.database);

// Issue 20: 100 fault rules of the control plane in force, none matching the request (other operations, paths,
// models, projects).
export const BENCH_CONTROL_KEY = 'ctl_bench-control-key-0123456789';
const addFault = (server: BenchServer, body: unknown) =>
  fetch(`${server.url}/_control/faults`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${BENCH_CONTROL_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
async function inactiveFaultRules(server: BenchServer): Promise<void> {
  const kinds = [
    (i: number) => ({ match: { operations: ['createChatCompletion', 'listFiles'] }, status: 500 + (i % 5) }),
    (i: number) => ({ match: { path: `/v1/nothing-here-${i}` }, delay_ms: 100 }),
    (i: number) => ({ match: { model: `no-such-model-${i}` }, status: 429 }),
    (i: number) => ({ match: { project_id: `proj_nope${i}` }, drop: true }),
  ];
  for (let i = 0; i < 100; i++) {
    const res = await addFault(server, kinds[i % kinds.length]!(i));
    if (!res.ok) throw new Error(`a fault rule was refused: ${res.status} ${await res.text()}`);
  }
}

// The rate limiter's own cost: the same chat completion with the limiter off, in memory and in Redis, with limits
// too high to refuse anything (so every request goes the whole way through the limiter's counting).
const chat = {
  model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
  messages: [{ role: 'user', content: 'Say something short about rate limits.' }],
  max_tokens: 64,
};
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
  target: { ratio: 0.45 },
  env,
  baseline,
  // Issue 31: the limits, in memory or in Redis, cost under 5% of a chat request.
  maxAdded: baseline ? 0.05 : undefined,
});

const experimentsChat = (name: string, model: string): Scenario => ({
  name: `experiments: chat, ${name}`,
  method: 'POST',
  path: '/v1/chat/completions',
  body: { ...chat, model },
  // What v2 chat reaches against the bare route today (two writes a request: routing and the served record; about
  // 0.03-0.04 measured): the figure these scenarios are for is the ADDED line.
  target: { ratio: 0.02 },
  setup: seedExperiments,
});

const SENTENCES = [
  'The llama is a domesticated South American camelid.',
  'Relational databases store rows in tables.',
  'Photosynthesis turns light into chemical energy.',
  'The stock market fell as interest rates rose.',
];
/** 16 short texts (8 to 10 tokens each), as a retrieval pipeline embeds a batch of chunks. */
const INPUTS = Array.from({ length: 16 }, (_, i) => `${SENTENCES[i % 4]} (passage ${i + 1})`);
/** 1,000 short documents (about 10 words each) over a small vocabulary, so that the query's terms recur. */
const WORDS = ['llama', 'camelid', 'andes', 'peru', 'wool', 'desert', 'camel', 'panda', 'bamboo', 'china', 'river', 'mountain', 'farm', 'herd', 'alpaca'];
const DOCUMENTS = Array.from(
  { length: 1000 },
  (_, i) => `Document ${i}: the ${Array.from({ length: 8 }, (_, k) => WORDS[(i * 7 + k * 11) % WORDS.length]).join(' ')}.`,
);

/** 200 KB of random letters without a space: one pre-token, which the tokenizer once merged in quadratic time. */
const UNBROKEN = Array.from({ length: 200_000 }, (_, i) => String.fromCharCode(97 + ((i * 7919 + ((i * i) % 65_521)) % 26))).join('');

export const scenarios: Scenario[] = [
  // The control plane on (npm start's default) and off: issue 31, its cost on whoami under 5% CPU.
  {
    name: 'whoami',
    method: 'GET',
    path: '/v1/whoami',
    target: { ratio: 0.75 },
    env: { CONTROL_API: 'on' },
    baseline: 'whoami, control plane off',
    maxAdded: 0.05,
  },
  {
    name: 'whoami, control plane off',
    method: 'GET',
    path: '/v1/whoami',
    target: { ratio: 0.75 },
    env: { CONTROL_API: 'off' },
  },
  // Issue 20: 100 fault rules in force that match no request cost a whoami under 5% CPU, against whoami with none.
  // Measured as the other settings are, two servers driven at once (the rules made on one before its warm-up): in
  // alternating slices on one server, each slice after a hundred rule changes, a slice of 2 s read 8.0% (an A/A
  // of the same slices -2.2%) and one of 6 s 3.9%, the changes' own aftermath counted in with the rules.
  {
    name: 'whoami, 100 inactive fault rules',
    method: 'GET',
    path: '/v1/whoami',
    target: { ratio: 0.7 },
    env: { CONTROL_KEY: BENCH_CONTROL_KEY },
    setup: inactiveFaultRules,
    baseline: 'whoami',
    maxAdded: 0.05,
  },
  { name: 'hardware (1.7 KB list)', method: 'GET', path: '/v1/hardware', target: { ratio: 0.7 } },
  {
    // Issue 10: a serverless chat completion on the local engine, 64 tokens out (the long message makes the answer
    // run past 64 tokens, so max_tokens cuts it), whole (not streamed).
    name: 'chat (non-streaming, 64 tokens)',
    method: 'POST',
    path: '/v1/chat/completions',
    body: {
      model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        {
          role: 'user',
          content: 'Tell me about the history of the printing press in Europe, from Gutenberg to the industrial presses of the nineteenth century.',
        },
      ],
      max_tokens: 64,
    },
    target: { ratio: 0.45 },
  },
  limiter('limits off', { RATE_LIMITS: 'off' }),
  // The A/A control: a second server like the first, measured against it as the settings below are. What it reads is
  // the method's error on this machine (nothing differs), the margin to read the other ADDED lines with.
  { ...limiter('limits off, a second server (A/A control)', { RATE_LIMITS: 'off' }, 'limiter: chat, limits off'), maxAdded: undefined },
  limiter('limits in memory', { ...unlimited, REDIS_URL: '' }, 'limiter: chat, limits off'),
  limiter(
    'limits in Redis',
    { ...unlimited, REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', RATE_LIMIT_KEY_PREFIX: `bench-${process.pid}` },
    'limiter: chat, limits off',
  ),
  // The bare route parses the same request and answers the same 16 x 768 floats from memory (about 40 KB of JSON:
  // most of a lexical vector's dimensions are 0); the whole stack also validates both, looks the model up, counts
  // the tokens and computes the 16 vectors.
  {
    name: 'embeddings (16 inputs, 768 floats each)',
    method: 'POST',
    path: '/v1/embeddings',
    body: { model: 'BAAI/bge-base-en-v1.5', input: INPUTS },
    target: { ratio: 0.45 },
  },
  // Every document is scored and all 1,000 results answered (about 60 KB); the bare route answers the same from memory.
  {
    name: 'rerank (1,000 short documents)',
    method: 'POST',
    path: '/v1/rerank',
    body: { model: 'Salesforce/Llama-Rank-v1', query: 'llama herds in the andes of peru', documents: DOCUMENTS },
    target: { p50Ms: 5 },
    connections: 1,
  },
  // Issue 17: a 200 KB unbroken chat prompt (within Llama 3.3's 131,072 tokens, so answered) costs a linear pass
  // of the tokenizer, not a minute; one connection, so p50 is the request's own time.
  {
    name: 'chat, 200 KB unbroken prompt',
    method: 'POST',
    path: '/v1/chat/completions',
    body: { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', messages: [{ role: 'user', content: UNBROKEN }], max_tokens: 16 },
    target: { p50Ms: 50 },
    connections: 1,
  },
  // Issue 17: lists the contract does not page are answered whole, however long. Measured one request at a time (a
  // 1-2 MB answer is mostly one request's CPU: p50 and CPU per request are the figures); the bare route answers the
  // same text from memory.
  {
    name: `secrets list (${LIST_ROWS.toLocaleString('en')} secrets)`,
    method: 'GET',
    path: '/v1/deployments/secrets',
    target: { p50Ms: 150 },
    connections: 1,
    setup: withLists,
  },
  {
    name: `files list (${LIST_ROWS.toLocaleString('en')} files)`,
    method: 'GET',
    path: '/v1/files',
    target: { p50Ms: 150 },
    connections: 1,
    setup: withLists,
  },
  // Issue 19: chat on a v2 endpoint with an A/B experiment (50/50) and a shadow experiment copying every request
  // to a third deployment, against the same chat on a plain v2 endpoint (its ADDED line): the copies run in the
  // same process, so their CPU is counted; goal at most 15% more CPU per request.
  { ...experimentsChat('plain endpoint', plainModel) },
  { ...experimentsChat('A/B + shadow (100% sampled)', experimentModel), baseline: 'experiments: chat, plain endpoint', maxAdded: 0.15 },
];
