import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { buildMs, merge } from './bpe.ts';
console.log('build ms', buildMs.toFixed(0));
const PLAIN = { disallowedSpecial: new Set<string>() };
const SPLIT = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'gu');
function mine(text: string) {
  const out: number[] = [];
  SPLIT.lastIndex = 0;
  for (let m = SPLIT.exec(text); m; m = SPLIT.exec(text)) {
    if (m[0] === '') { SPLIT.lastIndex++; continue; }
    for (const t of merge(Buffer.from(m[0], 'utf8').toString('latin1'))) out.push(t);
  }
  return out;
}
const rnd = (N: number, alphabet: string[], seed = 7) => { let s = ''; let x = seed; while (s.length < N) { x = (x * 1103515245 + 12345) >>> 0; s += alphabet[(x >>> 8) % alphabet.length]; } return s.slice(0, N); };
const gens: Record<string, (n: number, seed?: number) => string> = {
  letter: (n) => 'a'.repeat(n),
  letters_random: (n, s) => rnd(n, 'abcdefghijklmnopqrstuvwxyz'.split(''), s),
  punct: (n, s) => rnd(n, '!@#$%^&*()_+-=[]{};:,./<>?'.split(''), s),
  spaces: (n) => ' '.repeat(n),
  newlines: (n) => '\n'.repeat(n),
  mixed_ws: (n, s) => rnd(n, [' ', '\n', '\t', '\r'], s),
  mixed_scripts: (n, s) => rnd(n, 'aбв中文한글ﺎﺑ'.split(''), s),
  emoji: (n, s) => rnd(n, ['😀', '🎉', '👍🏽', '🇫🇷'], s),
  words_nospace: (n, s) => rnd(n, ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'Hello', 'World'], s),
  lone: (n, s) => rnd(n, ['\ud800', '\udc00', 'a', 'é'], s),
  ordinary: (n, s) => rnd(n, 'The quick brown fox, aged 1234, jumps over the lazy dog.\n It\'s 3.14 — naïve café 東京 😀 '.split(' ').map((w) => w + ' '), s),
};
let bad = 0;
for (const [name, g] of Object.entries(gens)) {
  for (const seed of [1, 2, 3]) {
    const s = g(3000, seed);
    const a = encode(s, PLAIN), b = mine(s);
    if (a.length !== b.length || a.some((v, i) => v !== b[i])) { bad++; console.log('MISMATCH', name, seed, a.length, b.length); }
  }
  const big = g(200_000, 9);
  mine(big.slice(0, 20000));
  const t = performance.now(); const n = mine(big).length;
  console.log(name.padEnd(15), `200K: ${(performance.now() - t).toFixed(1)} ms, ${n} tokens`);
}
console.log('mismatches', bad);
