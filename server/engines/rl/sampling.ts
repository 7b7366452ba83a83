// Sampling from a model's weights: temperature (0: greedy), top-k and top-p over the whole vocabulary, stop strings,
// the end-of-text token, a token budget and a seed (the same seed gives the same tokens). The tokens outside the
// model's table share one logit: they enter top-k and top-p as a block of equal tokens, and a draw that lands in the
// block picks one of them uniformly. Each sampled token's logprob is the model's own (temperature 1, before top-k
// and top-p), the logprob a forward pass computes for it, so that importance ratios start at exactly 1.
import { setImmediate as yieldNow } from 'node:timers/promises';
import { decode } from '../tokens.ts';
import { END_OF_TEXT, Net, type Weights } from './net.ts';
import { random } from './random.ts';

export interface SamplingParams {
  maxTokens: number;
  temperature: number;
  topP: number;
  /** 0 or less: no limit. */
  topK: number;
  stop: string[];
  seed: string;
}

export interface Sequence {
  tokens: number[];
  logprobs: number[];
  stop: 'length' | 'stop';
}

/** The candidates after top-k and top-p: table slots, and how many of the tokens outside the table. */
interface Candidates {
  slots: number[];
  outside: number;
}

/** The top-k and top-p candidates of a distribution (at the sampling temperature). */
function candidates(net: Net, z: Float64Array, other: number, p: SamplingParams): Candidates {
  const order = Array.from(z.keys()).sort((a, b) => z[b]! - z[a]! || a - b);
  // Walk tokens from the most likely, the block of outside tokens in its place among them.
  const entries: { slot: number | null; logit: number; count: number }[] = [];
  let placed = net.outside === 0;
  for (const j of order) {
    if (!placed && other > z[j]!) {
      entries.push({ slot: null, logit: other, count: net.outside });
      placed = true;
    }
    entries.push({ slot: j, logit: z[j]!, count: 1 });
  }
  if (!placed) entries.push({ slot: null, logit: other, count: net.outside });
  if (p.topK > 0) {
    let room = p.topK;
    for (const e of entries) {
      e.count = Math.min(e.count, room);
      room -= e.count;
    }
  }
  const kept = entries.filter((e) => e.count > 0);
  if (p.topP < 1) {
    const t = p.temperature || 1;
    const max = kept[0]!.logit;
    const mass = kept.map((e) => Math.exp((e.logit - max) / t));
    const total = kept.reduce((s, e, i) => s + e.count * mass[i]!, 0);
    let acc = 0;
    for (const [i, e] of kept.entries()) {
      const each = mass[i]! / total;
      if (acc + e.count * each >= p.topP) {
        e.count = Math.max(1, Math.min(e.count, Math.ceil((p.topP - acc) / each)));
        kept.length = i + 1;
        break;
      }
      acc += e.count * each;
    }
  }
  return { slots: kept.filter((e) => e.slot !== null).map((e) => e.slot!), outside: kept.find((e) => e.slot === null)?.count ?? 0 };
}

/** One token after `context`, and its logprob. */
function draw(net: Net, context: number[], p: SamplingParams, next: () => number): { token: number; logprob: number } {
  const { z, other, logZ } = net.next(context);
  const logprobOf = (token: number) => net.logprobOf(token, z, other, logZ);
  if (p.temperature === 0) {
    // Greedy: the most likely token; ties go to the table's first slot, and the outside block to its lowest id.
    let best = -1;
    for (let j = 0; j < z.length; j++) if (best < 0 || z[j]! > z[best]!) best = j;
    const token = best >= 0 && (net.outside === 0 || z[best]! >= other) ? net.w.table[best]! : net.outsideTokens(1)[0]!;
    return { token, logprob: logprobOf(token) };
  }
  // Without top-k or top-p every token is a candidate: no need to order them.
  const c = p.topK <= 0 && p.topP >= 1 ? { slots: Array.from(z.keys()), outside: net.outside } : candidates(net, z, other, p);
  const max = Math.max(...c.slots.map((j) => z[j]!), c.outside > 0 ? other : -Infinity);
  const weights = c.slots.map((j) => Math.exp((z[j]! - max) / p.temperature));
  const outsideWeight = c.outside * Math.exp((other - max) / p.temperature);
  let u = next() * (weights.reduce((a, b) => a + b, 0) + outsideWeight);
  for (const [i, j] of c.slots.entries()) {
    u -= weights[i]!;
    if (u < 0) return { token: net.w.table[j]!, logprob: logprobOf(net.w.table[j]!) };
  }
  const token = c.outside > 0 ? net.drawOutside(next) : net.w.table[c.slots.at(-1)!]!;
  return { token, logprob: logprobOf(token) };
}

/** Whether the sampled text now ends a stop string (only the text's tail is decoded, so a step costs the same late as early). */
function stopped(tokens: number[], stops: string[], longest: number): boolean {
  if (!stops.length) return false;
  const tail = decode(tokens.slice(-(longest + 8)));
  return stops.some((s) => tail.includes(s));
}

/** Samples `count` sequences after `prompt`; the i-th uses the seed's i-th stream. */
export async function sampleSequences(w: Weights, prompt: number[], count: number, p: SamplingParams, stream: string): Promise<Sequence[]> {
  const net = new Net(w);
  const longest = Math.max(0, ...p.stop.map((s) => s.length));
  const out: Sequence[] = [];
  for (let i = 0; i < count; i++) {
    const rng = random('rl-sample', p.seed, stream, i);
    const tokens: number[] = [];
    const logprobs: number[] = [];
    let stop: Sequence['stop'] = 'length';
    while (tokens.length < p.maxTokens) {
      const { token, logprob } = draw(net, [...prompt, ...tokens], p, rng.next);
      tokens.push(token);
      logprobs.push(logprob);
      if (token === END_OF_TEXT || stopped(tokens, p.stop, longest)) {
        stop = 'stop';
        break;
      }
      // Long generations let other requests in.
      if (tokens.length % 64 === 0) await yieldNow();
    }
    out.push({ tokens, logprobs, stop });
    await yieldNow();
  }
  return out;
}

/** The `k` most likely tokens after `context`, with their logprobs (chat's `top_logprobs`). */
export function topTokens(w: Weights, context: number[], k: number): { id: number; logprob: number }[] {
  const net = new Net(w);
  const { z, other, logZ } = net.next(context);
  const c = candidates(net, z, other, { maxTokens: 0, temperature: 1, topP: 1, topK: k, stop: [], seed: '' });
  const ids = [...c.slots.map((j) => net.w.table[j]!), ...net.outsideTokens(c.outside)];
  return ids.map((id) => ({ id, logprob: net.logprobOf(id, z, other, logZ) })).sort((a, b) => b.logprob - a.logprob || a.id - b.id);
}

/** Each prompt token's logprob given the tokens before it (the first given the start), and optionally its top k. */
export function promptLogprobs(w: Weights, prompt: number[], topK: number) {
  const net = new Net(w);
  const logprobs: number[] = [];
  const top: { token_ids: number[]; logprobs: number[] }[] = [];
  for (let t = 0; t < prompt.length; t++) {
    const { z, other, logZ } = net.next(prompt.slice(0, t));
    logprobs.push(net.logprobOf(prompt[t]!, z, other, logZ));
    if (topK > 0) {
      const c = candidates(net, z, other, { maxTokens: 0, temperature: 1, topP: 1, topK, stop: [], seed: '' });
      const ids = [...c.slots.map((j) => net.w.table[j]!), ...net.outsideTokens(c.outside)];
      const lps = ids.map((id) => net.logprobOf(id, z, other, logZ));
      const order = ids.map((_, k) => k).sort((a, b) => lps[b]! - lps[a]! || ids[a]! - ids[b]!);
      top.push({ token_ids: order.map((k) => ids[k]!), logprobs: order.map((k) => lps[k]!) });
    }
  }
  return { logprobs, top };
}
