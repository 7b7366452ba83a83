import { countTokens } from '../server/engines/tokens.ts';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
const words = 'the quick brown fox jumps over the lazy dog while Photosynthesis turns light into chemical energy, 1234 and databases store rows.'.split(' ');
let s = ''; let x = 3; while (s.length < 200_000) { x = (x * 1103515245 + 12345) >>> 0; s += words[(x >>> 8) % words.length] + ' '; }
for (let i = 0; i < 3; i++) {
  let t = performance.now(); const c = countTokens(s); const a = performance.now() - t;
  t = performance.now(); const e = encode(s).length; const b = performance.now() - t;
  console.log(`ordinary 200KB: our count ${a.toFixed(1)} ms (${c}), library encode ${b.toFixed(1)} ms (${e})`);
}
