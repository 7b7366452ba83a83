// Deterministic randomness for the RL engine: the same seed gives the same numbers on every machine and in every
// process, so a model's initial weights follow from its base model's name, and an operation run again after a
// crash (with the same seed, derived from its id) computes exactly what the first run did.
import { createHash } from 'node:crypto';

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Standard normal. */
  normal(): number;
  /** A whole number in [0, n). */
  below(n: number): number;
}

/** A generator seeded by the SHA-256 of its parts (xoshiro128**). */
export function random(...parts: (string | number | bigint)[]): Random {
  const digest = createHash('sha256').update(parts.map(String).join('\u0000')).digest();
  let a = digest.readUInt32LE(0);
  let b = digest.readUInt32LE(4);
  let c = digest.readUInt32LE(8);
  let d = digest.readUInt32LE(12);
  if ((a | b | c | d) === 0) a = 1;
  const u32 = () => {
    const r = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return r;
  };
  const next = () => (u32() * 2 ** 21 + (u32() >>> 11)) / 2 ** 53;
  let spare: number | null = null;
  return {
    next,
    normal() {
      if (spare !== null) {
        const s = spare;
        spare = null;
        return s;
      }
      // Box-Muller; 1 - next() is in (0, 1], so the logarithm is finite.
      const r = Math.sqrt(-2 * Math.log(1 - next()));
      const theta = 2 * Math.PI * next();
      spare = r * Math.sin(theta);
      return r * Math.cos(theta);
    },
    below: (n) => Math.floor(next() * n),
  };
}

const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;
