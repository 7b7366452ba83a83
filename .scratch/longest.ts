import { decode, vocabularySize } from 'gpt-tokenizer/encoding/cl100k_base';
let best = { chars: 0, bytes: 0, id: 0, s: '' };
let maxBytes = 0;
for (let id = 0; id < 100256; id++) {
  let s: string; try { s = decode([id]); } catch { continue; }
  const b = Buffer.byteLength(s);
  if (b > maxBytes) maxBytes = b;
  if (s.length > best.chars) best = { chars: s.length, bytes: b, id, s };
}
console.log(vocabularySize, best.chars, best.bytes, JSON.stringify(best.s.slice(0, 140)), 'max bytes', maxBytes);
