import { countTokens as count } from 'gpt-tokenizer/encoding/cl100k_base';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
const PLAIN = { disallowedSpecial: new Set<string>() };
const SPLIT = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'gu');
function chunked(text: string, bound: number) {
  let total = 0;
  SPLIT.lastIndex = 0;
  for (let m = SPLIT.exec(text); m; m = SPLIT.exec(text)) {
    const p = m[0];
    if (p === '') { SPLIT.lastIndex++; continue; }
    if (p.length <= bound) { total += count(p, PLAIN); continue; }
    for (let i = 0; i < p.length; ) {
      let end = Math.min(i + bound, p.length);
      const c = p.charCodeAt(end - 1);
      if (end < p.length && c >= 0xd800 && c <= 0xdbff) end++;
      total += count(p.slice(i, end), PLAIN);
      i = end;
    }
  }
  return total;
}
const rnd = (N: number, alphabet: string[]) => { let s = ''; let x = 7; while (s.length < N) { x = (x * 1103515245 + 12345) >>> 0; s += alphabet[(x >>> 8) % alphabet.length]; } return s.slice(0, N); };
const gens: Record<string, (n: number) => string> = {
  letter: (n) => 'a'.repeat(n),
  letters_random: (n) => rnd(n, 'abcdefghijklmnopqrstuvwxyz'.split('')),
  punct: (n) => rnd(n, '!@#$%^&*()_+-=[]{};:,./<>?'.split('')),
  spaces: (n) => ' '.repeat(n),
  newlines: (n) => '\n'.repeat(n),
  mixed_ws: (n) => rnd(n, [' ', '\n', '\t', '\r']),
  mixed_scripts: (n) => rnd(n, 'aбв中文한글ﺎﺑ'.split('')),
  emoji: (n) => rnd(n, ['😀', '🎉', '👍🏽', '🇫🇷']),
  words_nospace: (n) => rnd(n, ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'Hello', 'World']),
};
for (const [name, g] of Object.entries(gens)) {
  const small = g(8000);
  const exact = count(small, PLAIN);
  const big = g(200_000);
  const row: string[] = [];
  for (const bound of [64, 128, 256, 512]) {
    const dev = ((chunked(small, bound) - exact) / exact) * 100;
    chunked(big.slice(0, 20000), bound);
    const t = performance.now();
    chunked(big, bound);
    row.push(`${bound}: ${(performance.now() - t).toFixed(0)}ms ${dev >= 0 ? '+' : ''}${dev.toFixed(1)}%`);
  }
  console.log(name.padEnd(15), `exact8k=${exact}`.padEnd(13), row.join('  '));
}
