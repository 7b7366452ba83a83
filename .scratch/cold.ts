import { countTokens } from '../server/engines/tokens.ts';
const rnd = (N: number, alphabet: string[], seed: number) => { let s = ''; let x = seed; while (s.length < N) { x = (x * 1103515245 + 12345) >>> 0; s += alphabet[(x >>> 8) % alphabet.length]; } return s.slice(0, N); };
const L = 'abcdefghijklmnopqrstuvwxyz'.split('');
for (let seed = 1; seed <= 6; seed++) {
  const s = rnd(200_000, L, seed * 7919);
  const t = performance.now(); countTokens(s); console.log('random letters 200KB, fresh', (performance.now() - t).toFixed(1), 'ms');
}
const M = 'aбв中文한글ﺎﺑ'.split('');
for (let seed = 1; seed <= 3; seed++) {
  const s = rnd(200_000, M, seed * 7919);
  const t = performance.now(); countTokens(s); console.log('mixed scripts 200KB, fresh', (performance.now() - t).toFixed(1), 'ms');
}
