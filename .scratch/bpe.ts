import bpe from 'gpt-tokenizer/bpeRanks/cl100k_base';
let t0 = performance.now();
const RANKS = new Map<string, number>();
bpe.forEach((v, rank) => {
  RANKS.set(typeof v === 'string' ? Buffer.from(v, 'utf8').toString('latin1') : Buffer.from(v).toString('latin1'), rank);
});
export const buildMs = performance.now() - t0;

const SHIFT = 2 ** 32;
/** Byte-pair merges of one piece (its UTF-8 bytes as a latin1 string), lowest rank first, leftmost on ties. */
export function merge(bin: string): number[] {
  const whole = RANKS.get(bin);
  if (whole !== undefined) return [whole];
  const n = bin.length;
  const next = new Int32Array(n + 1);
  const prev = new Int32Array(n + 1);
  const rank = new Float64Array(n).fill(-1);
  const heap = new Float64Array(3 * n);
  let size = 0;
  const push = (key: number) => {
    let i = size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p]! <= key) break;
      heap[i] = heap[p]!;
      i = p;
    }
    heap[i] = key;
  };
  const pop = () => {
    const top = heap[0]!;
    const last = heap[--size]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= size) break;
      if (c + 1 < size && heap[c + 1]! < heap[c]!) c++;
      if (heap[c]! >= last) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = last;
    return top;
  };
  const pair = (s: number) => {
    const e = next[s]!;
    if (e >= n) return (rank[s] = -1);
    const r = RANKS.get(bin.slice(s, next[e]!));
    if (r === undefined) return (rank[s] = -1);
    rank[s] = r;
    push(r * SHIFT + s);
    return r;
  };
  for (let i = 0; i <= n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
  }
  for (let i = 0; i < n - 1; i++) pair(i);
  while (size > 0) {
    const key = pop();
    const s = key % SHIFT;
    const r = (key - s) / SHIFT;
    if (rank[s] !== r) continue;
    const e = next[s]!;
    const f = next[e]!;
    next[s] = f;
    prev[f] = s;
    rank[e] = -1;
    pair(s);
    if (s > 0) pair(prev[s]!);
  }
  const out: number[] = [];
  for (let i = 0; i < n; i = next[i]!) out.push(RANKS.get(bin.slice(i, next[i]!))!);
  return out;
}
