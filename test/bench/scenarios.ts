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
];
