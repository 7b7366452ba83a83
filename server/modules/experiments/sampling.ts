// Module `experiments`: which requests a shadow experiment copies (the tag's **Shadow experiments**, Sampling). Every
// process decides alike: key-based sampling on the request alone; uniform sampling by each process's own count of its
// requests (k of every n of each process's is k of every n of all of them); adaptive sampling by a count over its
// window that every process shares when the rate limits use Redis (`RateLimits.slide`; else each process counts its
// own, and each copies up to the target), kept per experiment while its sampling is unchanged.
import { type Sampling, windowSeconds } from './rules.ts';

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
  /** Whether this request (its body) is copied. */
  take(body: Record<string, unknown>): boolean | Promise<boolean>;
}

/** A count over the last `seconds` under `key` that adds one unless it has reached `cap` (`RateLimits.slide`). */
export type Slide = (key: string, seconds: number, cap?: number) => Promise<{ added: boolean; before: number }>;

export function sampler(s: Sampling, slide: Slide): Sampler {
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
    // At most targetQps x window copies in any window.
    return { take: async () => (await slide('copied', seconds, targetQps * seconds)).added };
  }
  const { targetQps, key, window } = s.adaptiveKeyBased;
  const seconds = windowSeconds(window);
  // The rate that would copy targetQps of the requests seen over the window, applied to the request's key.
  return {
    take: async (body) => {
      const { before } = await slide('seen', seconds);
      const rate = Math.min(1, (targetQps * seconds) / (before + 1));
      const f = keyFraction(body, key);
      return f !== null && f < rate;
    },
  };
}
