import api, { decode } from 'gpt-tokenizer/encoding/cl100k_base';
import { merge } from './bpe.ts';
const core = (api as any).bytePairEncodingCoreProcessor;
const w0 = 'HellothequickbrownfoxHello';
for (let i = 0; i < w0.length; i++) for (let j = i + 2; j <= w0.length; j++) {
  const w = w0.slice(i, j);
  const a = core.bytePairMerge(new TextEncoder().encode(w)).map((t: number) => decode([t])).join('|');
  const b = merge(Buffer.from(w).toString('latin1')).map((t) => decode([t])).join('|');
  if (a !== b) { console.log(JSON.stringify(w), a, b); process.exit(); }
}
