// The judge engine interface: what an evaluation needs from whatever runs its judge (and the models it evaluates).
// Three engines: the deterministic local judge (a lexical judgement it can compute, and says so), an upstream
// OpenAI-compatible server chosen by the engine routes (routes.ts), and an external OpenAI-compatible server named by
// the request. Every engine answers text; the evaluation reads the verdict out of it the same way for all three.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config, UrlFetchPolicy } from '../core/config.ts';
import { localChat } from './chat.ts';
import type { UpstreamRoute } from './routes.ts';
import { UpstreamFailure, upstreamFetch } from './upstream.ts';
import { readCapped, UserUrlError } from './user-urls.ts';

/** What the judge is asked about one row, in the order it is shown (for compare: `first` is shown as response A). */
export type JudgeTask =
  | { kind: 'classify'; labels: string[]; response: string }
  | { kind: 'score'; min: number; max: number; response: string; reference?: string }
  | { kind: 'compare'; first: string; second: string; reference?: string };

/** The messages and sampling settings of one call. */
export interface ChatCall {
  model: string;
  system: string;
  user: string;
  maxTokens: number;
  temperature: number;
}

export interface JudgeEngine {
  /** `local`, `upstream` or `external`: recorded with every verdict. */
  name: string;
  /** The judge's answer (text) to `call`; the local judge decides from `task` instead of reading the prompt. */
  judge(task: JudgeTask, call: ChatCall): Promise<string>;
  /** A response of the model under evaluation. */
  generate(call: ChatCall): Promise<string>;
}

export const LOCAL_JUDGE = 'local-lexical-judge';

/** The words of a text: its lowercase runs of letters and digits. */
export const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** How often the word sequence `phrase` occurs in `text`. */
function occurrences(text: string[], phrase: string[]): number {
  if (phrase.length === 0) return 0;
  let n = 0;
  for (let i = 0; i + phrase.length <= text.length; i++) if (phrase.every((w, j) => text[i + j] === w)) n++;
  return n;
}

/** The F1 of the words of `candidate` against those of `reference` (each word counted as often as it occurs in both). */
export function wordF1(candidate: string, reference: string): number {
  const c = words(candidate);
  const r = words(reference);
  const left = new Map<string, number>();
  for (const w of r) left.set(w, (left.get(w) ?? 0) + 1);
  let common = 0;
  for (const w of c) {
    const k = left.get(w) ?? 0;
    if (k > 0) {
      common++;
      left.set(w, k - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / c.length;
  const recall = common / r.length;
  return (2 * precision * recall) / (precision + recall);
}

const round = (x: number, places: number) => Math.round(x * 10 ** places) / 10 ** places;

/** The local judge: a verdict computed from the text alone (see the Evaluation tag's description), as a JSON answer. */
export function localVerdict(task: JudgeTask): string {
  const answer = (fields: Record<string, unknown>) => JSON.stringify({ judge: LOCAL_JUDGE, ...fields });
  switch (task.kind) {
    case 'classify': {
      const text = words(task.response);
      const counts = task.labels.map((label) => occurrences(text, words(label)));
      const best = Math.max(0, ...counts);
      const winners = task.labels.filter((_, i) => counts[i] === best);
      const figures = task.labels.map((l, i) => `'${l}' ${counts[i]}`).join(', ');
      if (best === 0) return answer({ label: null, explanation: `No label occurs in the response as a whole word (${figures}).` });
      if (winners.length > 1) return answer({ label: null, explanation: `Labels occur equally often in the response (${figures}): no single label.` });
      return answer({ label: winners[0], explanation: `Occurrences of each label in the response: ${figures}.` });
    }
    case 'score': {
      if (task.reference === undefined)
        throw new Error(
          `The ${LOCAL_JUDGE} scores against the row's reference, and this row has none (no reference, ground_truth, expected or answer column).`,
        );
      const f1 = wordF1(task.response, task.reference);
      const score = round(task.min + f1 * (task.max - task.min), 2);
      return answer({ score, explanation: `Word-overlap F1 with the reference: ${round(f1, 4)}, scaled to ${task.min}..${task.max}.` });
    }
    case 'compare': {
      if (task.reference === undefined) throw new Error(`The ${LOCAL_JUDGE} compares against the row's reference or prompt, and this row has neither.`);
      const a = wordF1(task.first, task.reference);
      const b = wordF1(task.second, task.reference);
      const winner = Math.abs(a - b) < 1e-12 ? 'tie' : a > b ? 'A' : 'B';
      return answer({ winner, explanation: `Word-overlap F1 with the reference: A ${round(a, 4)}, B ${round(b, 4)}.` });
    }
  }
}

export const localJudgeEngine: JudgeEngine = {
  name: 'local',
  judge: async (task) => localVerdict(task),
  async generate(call) {
    const answer = await localChat(call.model, {
      messages: [
        { role: 'system', content: call.system },
        { role: 'user', content: call.user },
      ],
      max_tokens: call.maxTokens,
    });
    return answer.choices[0].message.content as string;
  },
};

/** How calls to an OpenAI-compatible server are retried when it answers 429 or 503: `attempts` calls in all, backoff from `baseMs`, no wait above `maxMs`. */
export type RetryPolicy = Config['judgeRetry'];

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 1000, maxMs: 30_000 };

/** Statuses that say "later", not "no": the call is made again after a wait. */
const RETRIED = new Set([429, 503]);

/** A server that kept answering 429 or 503 to every attempt: the evaluation stops and fails with this message. */
export class RetriesExhausted extends Error {}

/**
 * The wait before attempt `attempt + 1` (attempt counts from 1): the server's `Retry-After` when it sent a usable
 * one (delay-seconds, or an HTTP date, from `nowMs`), else exponential backoff (`baseMs` x 2^(attempt-1)) with
 * jitter (a random half to whole of it, so that concurrent calls spread out); either way at most `maxMs`.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number, retryAfter: string | null, nowMs = Date.now(), random = Math.random): number {
  const header = retryAfter?.trim() ?? '';
  let ms: number | undefined;
  if (/^\d+$/.test(header)) ms = Number(header) * 1000;
  else if (/[a-z]/i.test(header)) {
    // An HTTP date names its day and month (Date.parse alone would take '-3' for a year).
    const at = Date.parse(header);
    if (!Number.isNaN(at)) ms = Math.max(0, at - nowMs);
  }
  if (ms === undefined) {
    const backoff = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
    ms = backoff / 2 + random() * (backoff / 2);
  }
  return Math.min(policy.maxMs, ms);
}

/** For tests: told of every wait before a retry (the server's URL and the wait), so a test checks what was planned, not the clock. */
export const retryHook: { onWait?: (url: string, ms: number) => void } = {};

/** The largest answer read from an external server (a judge's answer is a few KB; 32,768 tokens are about 130 KB). */
export const EXTERNAL_ANSWER_LIMIT_BYTES = 1024 * 1024;

/**
 * An OpenAI-compatible server (an upstream route, or an external judge): its `/chat/completions`, answered whole.
 * An external server (`external`: the caller's URL) is fetched under that policy, and its answer read up to
 * EXTERNAL_ANSWER_LIMIT_BYTES.
 */
export function openAiCompatibleEngine(
  name: 'upstream' | 'external',
  route: UpstreamRoute,
  policy: RetryPolicy = DEFAULT_RETRY,
  external?: UrlFetchPolicy,
): JudgeEngine {
  const attempts = Math.max(1, Math.floor(policy.attempts));
  // Once one call has given up, the job fails: the others stop retrying.
  let exhausted: RetriesExhausted | undefined;
  const fetchRetrying = async (body: unknown): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      if (exhausted) throw exhausted;
      try {
        return await upstreamFetch(route, '/chat/completions', body, { external });
      } catch (err) {
        if (!(err instanceof UpstreamFailure) || !RETRIED.has(err.upstreamStatus)) throw err;
        if (attempt >= attempts) {
          exhausted ??= new RetriesExhausted(
            `The ${name} server at ${route.url} answered ${err.upstreamStatus} (${err.upstreamStatus === 429 ? 'too many requests' : 'service unavailable'}) to ${attempts} attempt${attempts === 1 ? '' : 's'} in a row${err.upstreamMessage ? `: ${err.upstreamMessage}` : '.'}`.slice(
              0,
              600,
            ),
          );
          throw exhausted;
        }
        const wait = retryDelayMs(policy, attempt, err.retryAfter);
        retryHook.onWait?.(route.url, wait);
        await sleep(wait);
      }
    }
  };
  const complete = async (call: ChatCall): Promise<string> => {
    const res = await fetchRetrying({
      model: route.model ?? call.model,
      messages: [...(call.system ? [{ role: 'system', content: call.system }] : []), { role: 'user', content: call.user }],
      max_tokens: call.maxTokens,
      temperature: call.temperature,
      stream: false,
    });
    const body = (external ? await externalAnswer(res) : await res.json()) as { choices?: { message?: { content?: unknown } }[] };
    const content = body.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new Error(`The ${name} server at ${route.url} answered without choices[0].message.content.`);
    return content;
  };
  /** An external server's answer as JSON; what goes wrong is said without quoting it. */
  const externalAnswer = async (res: Response): Promise<unknown> => {
    let text: string;
    try {
      text = await readCapped(res.body as unknown as AsyncIterable<Uint8Array> | null, EXTERNAL_ANSWER_LIMIT_BYTES);
    } catch (err) {
      throw new Error(
        `The ${name} server at ${route.url} answered ${res.status}, but ${err instanceof UserUrlError ? err.message : 'its answer could not be read whole'}.`,
      );
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`The ${name} server at ${route.url} answered ${res.status} with a body that is not JSON.`);
    }
  };
  return { name, judge: (_task, call) => complete(call), generate: complete };
}
