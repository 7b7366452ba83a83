import { encode, decode } from 'gpt-tokenizer/encoding/cl100k_base';
import { merge } from './bpe.ts';
const PLAIN = { disallowedSpecial: new Set<string>() };
for (const w of ['HelloWorld', 'theHello', 'quickHello', 'HellothequickbrownfoxHello', 'Hello', 'helloWorld', 'WorldHello']) {
  const a = encode(w, PLAIN), b = merge(Buffer.from(w).toString('latin1'));
  console.log(w, a.map((t) => decode([t])), b.map((t) => decode([t])));
}
