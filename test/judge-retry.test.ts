// The judge's retries (engines/judge.ts): a call an upstream or external server answers 429 or 503 is made again,
// after the server's Retry-After (seconds or an HTTP date, capped at JUDGE_RETRY_MAX_MS) or an exponential backoff
// with jitter, up to JUDGE_RETRY_ATTEMPTS calls; past the last, the evaluation fails naming the status. A tiny
// local HTTP server is the judge; the waits are made short by the platform's config (judgeRetry), not by mocking time.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { retryDelayMs, retryHook } from '../server/engines/judge.ts';
import { storeFile } from '../server/modules/files/store.ts';
import { localUrls, startTestPlatform, type TestPlatform } from './support/platform.ts';

const ROUTED = 'Qwen/Qwen2.5-72B-Instruct-Turbo';
const ATTEMPTS = 4;
/** Retry-After of 1 s is honoured (below the cap); a longer one is cut to the cap; backoff starts at 5 ms. */
const RETRY = { attempts: ATTEMPTS, baseMs: 5, maxMs: 1500 };

/** What the judge answers to the n-th call of a scenario (a path prefix): a status and headers; past the script, 200. */
type Reply = { status: number; headers?: Record<string, string> };
const scripts = new Map<string, Reply[] | 'always-429' | 'always-503'>();
const calls = new Map<string, number[]>();
/** The waits the judge planned before each retry, by scenario: what is checked, rather than the clock's gaps. */
const waits = new Map<string, number[]>();
retryHook.onWait = (url, ms) => {
  const scenario = new URL(url).pathname.split('/')[1]!;
  waits.set(scenario, [...(waits.get(scenario) ?? []), ms]);
};

let judge: Server;
let judgeUrl: string;
let t: TestPlatform;
beforeAll(async () => {
  judge = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const scenario = req.url!.split('/')[1]!;
      const seen = calls.get(scenario) ?? [];
      seen.push(Date.now());
      calls.set(scenario, seen);
      const script = scripts.get(scenario) ?? [];
      const reply: Reply | undefined = script === 'always-429' ? { status: 429 } : script === 'always-503' ? { status: 503 } : script[seen.length - 1];
      if (reply) {
        res.writeHead(reply.status, { 'Content-Type': 'application/json', ...reply.headers });
        return void res.end(JSON.stringify({ error: { message: `busy (${scenario})` } }));
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: '{"label": "yes"}' }, finish_reason: 'stop' }],
        }),
      );
    });
  });
  await new Promise<void>((r) => judge.listen(0, '127.0.0.1', r));
  judgeUrl = `http://127.0.0.1:${(judge.address() as AddressInfo).port}`;
  t = await startTestPlatform({
    config: {
      judgeRetry: RETRY,
      urlFetch: localUrls,
      engines: { routes: [{ models: [ROUTED], capabilities: ['chat'], engine: 'upstream', url: `${judgeUrl}/routed/v1`, apiKey: 'k' }] },
    },
  });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => judge?.close(r));
});

async function evaluate(judgeParams: object) {
  const file = (
    await storeFile(
      t.services,
      { projectId: t.caller.identity.projectId, filename: 'in.jsonl', purpose: 'eval', fileType: 'jsonl' },
      '{"question": "q", "response": "yes"}\n',
    )
  ).id;
  const res = await t.caller.http.post('/v1/evaluation').send({
    type: 'classify',
    parameters: {
      judge: { system_template: 'Judge.', ...judgeParams },
      labels: ['yes', 'no'],
      pass_labels: ['yes'],
      model_to_evaluate: 'response',
      input_data_file_path: file,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await t.advance(0);
  return (await t.caller.http.get(`/v1/evaluation/${res.body.workflow_id}`)).body;
}

const external = (scenario: string) => ({ model: 'j', model_source: 'external', external_base_url: `${judgeUrl}/${scenario}/v1`, external_api_token: 't' });
const gaps = (scenario: string) =>
  calls
    .get(scenario)!
    .slice(1)
    .map((at, i) => at - calls.get(scenario)![i]!);

describe('429 and 503 are retried', () => {
  test('429 with Retry-After: 1 twice, then an answer: three calls a second apart, the job completes', async () => {
    scripts.set('seconds', [
      { status: 429, headers: { 'Retry-After': '1' } },
      { status: 429, headers: { 'Retry-After': '1' } },
    ]);
    const job = await evaluate(external('seconds'));
    expect(job.status).toBe('completed');
    expect(job.results).toMatchObject({ judge_fail_count: 0, pass_percentage: 100 });
    expect(calls.get('seconds')).toHaveLength(3);
    // Retry-After honoured: not the 5 ms backoff (a sleep never ends early, so the gaps are at least the waits).
    expect(waits.get('seconds')).toEqual([1000, 1000]);
    for (const gap of gaps('seconds')) expect(gap).toBeGreaterThanOrEqual(950);
  });

  test('503 with Retry-After as an HTTP date an hour away: the wait is cut to JUDGE_RETRY_MAX_MS', async () => {
    scripts.set('date', [{ status: 503, headers: { 'Retry-After': new Date(Date.now() + 3_600_000).toUTCString() } }]);
    const job = await evaluate(external('date'));
    expect(job.status).toBe('completed');
    expect(calls.get('date')).toHaveLength(2);
    expect(waits.get('date')).toEqual([RETRY.maxMs]);
    expect(gaps('date')[0]).toBeGreaterThanOrEqual(RETRY.maxMs - 50);
  });

  test('without Retry-After: exponential backoff from JUDGE_RETRY_BASE_MS; an upstream route is retried too', async () => {
    scripts.set('routed', [{ status: 503 }, { status: 429 }]);
    const job = await evaluate({ model: ROUTED, model_source: 'serverless' });
    expect(job.status).toBe('completed');
    expect(calls.get('routed')).toHaveLength(3);
    // Backoff from 5 ms with jitter (a half to the whole): 2.5-5 ms, then 5-10 ms.
    const [first, second] = waits.get('routed')!;
    expect(first).toBeGreaterThanOrEqual(2.5);
    expect(first).toBeLessThanOrEqual(5);
    expect(second).toBeGreaterThanOrEqual(5);
    expect(second).toBeLessThanOrEqual(10);
  });

  test('a server that always answers 429: JUDGE_RETRY_ATTEMPTS calls, then the job fails (error) naming the status', async () => {
    scripts.set('always', 'always-429');
    const job = await evaluate(external('always'));
    expect(job.status).toBe('error');
    expect(calls.get('always')).toHaveLength(ATTEMPTS);
    expect(job.results.error).toMatch(/answered 429 \(too many requests\) to 4 attempts/);
    expect(job.results.error).toContain(`${judgeUrl}/always/v1`);
    expect(job.status_updates.at(-1)).toMatchObject({ status: 'error', message: job.results.error });
  });

  test('always 503 through an upstream route: the job fails naming 503', async () => {
    calls.delete('routed');
    scripts.set('routed', 'always-503');
    const job = await evaluate({ model: ROUTED, model_source: 'serverless' });
    expect(job.status).toBe('error');
    expect(job.results.error).toMatch(/answered 503 \(service unavailable\) to 4 attempts/);
    expect(calls.get('routed')).toHaveLength(ATTEMPTS);
  });

  test('another failure (500) is not retried: the row fails, the job completes', async () => {
    scripts.set('broken', [{ status: 500 }]);
    const job = await evaluate(external('broken'));
    expect(job.status).toBe('completed');
    expect(job.results).toMatchObject({ judge_fail_count: 1 });
    expect(calls.get('broken')).toHaveLength(1);
  });
});

describe('retryDelayMs', () => {
  const policy = { attempts: 5, baseMs: 100, maxMs: 1000 };
  test('Retry-After as seconds or an HTTP date, capped; an unusable one falls back to backoff', () => {
    expect(retryDelayMs(policy, 1, '0')).toBe(0);
    expect(retryDelayMs(policy, 1, ' 1 ')).toBe(1000);
    expect(retryDelayMs(policy, 1, '120')).toBe(1000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryDelayMs(policy, 1, 'Thu, 01 Jan 2026 00:00:00 GMT', now - 500)).toBe(500);
    expect(retryDelayMs(policy, 1, 'Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(retryDelayMs(policy, 1, 'soon', now, () => 1)).toBe(100);
    expect(retryDelayMs(policy, 1, '-3', now, () => 1)).toBe(100);
  });
  test('backoff doubles per attempt with jitter (a half to the whole), up to the cap', () => {
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(policy, a, null, 0, () => 1))).toEqual([100, 200, 400, 800, 1000]);
    expect([1, 2, 3].map((a) => retryDelayMs(policy, a, null, 0, () => 0))).toEqual([50, 100, 200]);
    for (let i = 0; i < 50; i++) {
      const d = retryDelayMs(policy, 3, null);
      expect(d).toBeGreaterThanOrEqual(200);
      expect(d).toBeLessThanOrEqual(400);
    }
  });
});
