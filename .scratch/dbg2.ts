import api, { decode } from 'gpt-tokenizer/encoding/cl100k_base';
import { merge } from './bpe.ts';
const core = (api as any).bytePairEncodingCoreProcessor;
for (const w of ['thequick', 'Hellothequick', 'Hellothe', 'othe', 'lothe']) {
  const a = core.bytePairMerge(new TextEncoder().encode(w));
  const b = merge(Buffer.from(w).toString('latin1'));
  console.log(w, a.map((t: number) => decode([t])), b.map((t) => decode([t])));
}
