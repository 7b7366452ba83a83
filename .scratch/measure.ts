import { countTokens, encode } from '../server/engines/tokens.ts';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
const N = Number(process.env.N ?? 200_000);
const rnd = (alphabet: string[]) => { let s = ''; let x = 1; while (s.length < N) { x = (x * 1103515245 + 12345) >>> 0; s += alphabet[x % alphabet.length]; } return s.slice(0, N); };
const cases: Record<string, string> = {
  letter: 'a'.repeat(N),
  letters_random: rnd('abcdefghijklmnopqrstuvwxyz'.split('')),
  digits: rnd('0123456789'.split('')),
  punct: rnd('!@#$%^&*()_+-=[]{};:,./<>?'.split('')),
  spaces: ' '.repeat(N),
  newlines: '\n'.repeat(N),
  mixed_ws: rnd([' ', '\n', '\t', '\r']),
  mixed_scripts: rnd('aбв中文한글ﺎﺑ'.split('')),
  emoji: rnd(['😀', '🎉', '👍🏽', '🇫🇷']),
  lone_surrogates: rnd(['\ud800', '\udc00', 'a']),
  base64: rnd('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('')),
  space_punct: rnd([' !', ' ', '!']),
};
const only = process.env.ONLY?.split(',');
const split = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'gu');
for (const [name, s] of Object.entries(cases)) {
  if (only && !only.includes(name)) continue;
  let t = performance.now();
  let pieces = 0; split.lastIndex = 0;
  for (let m = split.exec(s); m; m = split.exec(s)) { if (m[0] === '') split.lastIndex++; pieces++; }
  const splitMs = performance.now() - t;
  t = performance.now();
  const c = process.env.NOCOUNT ? -1 : countTokens(s);
  const countMs = performance.now() - t;
  let encMs = NaN;
  if (process.env.ENC) { t = performance.now(); encode(s); encMs = performance.now() - t; }
  console.log(`${name.padEnd(16)} len ${s.length} split ${splitMs.toFixed(1)} ms (${pieces} pieces)  count ${countMs.toFixed(1)} ms = ${c}  encode ${encMs.toFixed(1)} ms`);
}
