// Module `experiments`: which requests a shadow experiment copies (the tag's **Shadow experiments**, Sampling). The
// counters are this process's: per experiment, kept while its sampling is unchanged.
import { type Sampling, windowSeconds } from './rules.ts';

/** Copies per one-second bucket over a window (a ring of buckets; old ones are cleared as time moves on). */
class WindowCount {
  private readonly buckets: number[];
  private last = 0;
  constructor(private readonly seconds: number) {
    this.buckets = new Array(seconds).fill(0);
  }
  private roll(nowS: number): void {
    const gap = Math.min(nowS - this.last, this.seconds);
    for (let i = 1; i <= gap; i++) this.buckets[(this.last + i) % this.seconds] = 0;
    if (nowS > this.last) this.last = nowS;
  }
  add(nowMs: number): void {
    const s = Math.floor(nowMs / 1000);
    this.roll(s);
    this.buckets[s % this.seconds]! += 1;
  }
  total(nowMs: number): number {
    this.roll(Math.floor(nowMs / 1000));
    return this.buckets.reduce((a, b) => a + b, 0);
  }
}

/** FNV-1a (32 bits) of a string, as a fraction in [0, 1). */
function fraction(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) / 2 ** 32;
}

/** The fraction a request's key hashes to, or null when the body lacks the field. */
function keyFraction(body: Record<string, unknown>, key: string): number | null {
  let v: unknown = body;
  for (const part of key.split('.')) {
    if (v === null || typeof v !== 'object') return null;
    v = (v as Record<string, unknown>)[part];
  }
  return v === undefined ? null : fraction(JSON.stringify(v));
}

export interface Sampler {
  /** Whether this request (its body, at `nowMs` of the clock) is copied. */
  take(body: Record<string, unknown>, nowMs: number): boolean;
}

export function sampler(s: Sampling): Sampler {
  if ('uniform' in s) {
    const { rate } = s.uniform;
    let k = 0;
    // Evenly spread: candidate k is copied when floor((k+1)·rate) passes an integer.
    return { take: () => Math.floor(++k * rate) > Math.floor((k - 1) * rate) };
  }
  if ('keyBased' in s) {
    const { rate, key } = s.keyBased;
    return {
      take: (body) => {
        const f = keyFraction(body, key);
        return f !== null && f < rate;
      },
    };
  }
  if ('adaptiveUniform' in s) {
    const { targetQps, window } = s.adaptiveUniform;
    const seconds = windowSeconds(window);
    const copied = new WindowCount(seconds);
    return {
      take: (_body, now) => {
        if (copied.total(now) >= targetQps * seconds) return false;
        copied.add(now);
        return true;
      },
    };
  }
  const { targetQps, key, window } = s.adaptiveKeyBased;
  const seconds = windowSeconds(window);
  const seen = new WindowCount(seconds);
  return {
    take: (body, now) => {
      seen.add(now);
      const rate = Math.min(1, (targetQps * seconds) / seen.total(now));
      const f = keyFraction(body, key);
      return f !== null && f < rate;
    },
  };
}
