// The requests `npm run bench` measures through the whole stack, each against a bare Express route that answers the
// same body from memory (test/bench/bare.ts). A target is either a ratio of throughputs (whole stack / bare, the
// median of alternating rounds) or a latency (p50 through the whole stack).
export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  target: { ratio?: number; p50Ms?: number };
}

export const scenarios: Scenario[] = [
  { name: 'whoami', method: 'GET', path: '/v1/whoami', target: { ratio: 0.65 } },
  { name: 'hardware (1.7 KB list)', method: 'GET', path: '/v1/hardware', target: { ratio: 0.5 } },
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
        { role: 'user', content: 'Tell me about the history of the printing press in Europe, from Gutenberg to the industrial presses of the nineteenth century.' },
      ],
      max_tokens: 64,
    },
    target: { ratio: 0.3 },
  },
];
