// Token counts. The platform's models each have their own tokenizer, which this offline server does not have; it
// counts with one real BPE tokenizer for all of them (cl100k_base, through gpt-tokenizer), so usage figures, context
// lengths and token-based rate limits are real counts of the text, close to (not equal to) each model's own.
import { createRequire } from 'node:module';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';

// The vocabulary (a 1 MB module) and the library's encoder, and the tables below built from them, cost about 300 ms
// of CPU: they are loaded on the first count, not at start (a server that never counts a token never pays it; one
// that does pays it once). `require` is what makes the load synchronous, where the functions below are called.
const require = createRequire(import.meta.url);

export const TOKENIZER = 'cl100k_base';

// The tokenizer first splits text into pieces (words with their leading space, runs of digits, punctuation, white
// space) and encodes each piece on its own, so a text's tokens are its pieces' tokens one after the other. Byte-pair
// merging one piece costs the square of its length, and a piece has no length limit (a 200 KB string without
// spaces is one piece: a minute of blocked event loop). So a piece longer than PIECE_BYTES bytes of UTF-8 is
// encoded in runs of at most that many bytes (whole characters), which makes the work linear in the text. 128 is
// the longest token's length (128 spaces): every token of the vocabulary still fits in one run, and a run's merge
// is cheap. Only such long pieces (a string of letters, punctuation or white space over 128 bytes long: never
// ordinary prose) can count differently from the library's whole-piece encoding, by about one token per run
// boundary at most.
export const PIECE_BYTES = 128;

// Pieces recur (a vocabulary is small), so their tokens are remembered, up to a bound: counting a thousand rerank
// documents costs a split and lookups rather than a thousand encodings. Only short pieces are kept, so the memory
// stays small.
const PIECES = new Map<string, number[]>();
const PIECE_CACHE_SIZE = 100_000;
// A long piece's runs are kept too (a run is at most PIECE_BYTES bytes): a long repeated string costs one merge.
const PIECE_CACHE_LENGTH = PIECE_BYTES;
// Its own copy of the splitting expression, run with exec: matchAll would copy the (large) expression per call.
// Linear on every input tried (200 KB of one letter, digits, punctuation, spaces, newlines, mixed scripts, emoji,
// lone surrogates): test/bounded-work.test.ts.
const SPLIT = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'gu');

// Each token's rank by its bytes (as a latin1 string: one character a byte), and the merges: for every token made of
// two tokens, the pair's key (their ranks) to its rank. Merging a piece then looks pairs up by two numbers instead of
// slicing and hashing their bytes (the library's own merge decodes each candidate pair with a TextDecoder): several
// times faster, which is what makes a 200 KB prompt of letters without a space cost tens of milliseconds. Every
// single byte is a token of cl100k_base, so a piece's parts are tokens from the start and after every merge.
const PAIR = 1 << 17; // above the largest rank
interface Tables {
  ranks: Map<string, number>;
  pairs: Map<number, number>;
  byteRanks: Int32Array;
  decodeGenerator: (ids: Iterable<number>) => Generator<string>;
}
let loaded: Tables | undefined;
function tables(): Tables {
  if (loaded) return loaded;
  const vocabulary: (string | number[])[] = require('gpt-tokenizer/bpeRanks/cl100k_base').default;
  const ranks = new Map<string, number>();
  vocabulary.forEach((token, rank) => {
    ranks.set(Buffer.from(token as string | number[]).toString('latin1'), rank);
  });
  const pairs = new Map<number, number>();
  for (const [bytes, rank] of ranks) {
    for (let k = 1; k < bytes.length; k++) {
      const a = ranks.get(bytes.slice(0, k));
      const b = a === undefined ? undefined : ranks.get(bytes.slice(k));
      if (b !== undefined) pairs.set(a! * PAIR + b, rank);
    }
  }
  const byteRanks = Int32Array.from({ length: 256 }, (_, i) => ranks.get(String.fromCharCode(i))!);
  loaded = { ranks, pairs, byteRanks, decodeGenerator: require('gpt-tokenizer/encoding/cl100k_base').decodeGenerator };
  return loaded;
}
const parts = new Int32Array(PIECE_BYTES);
const pairRanks = new Float64Array(PIECE_BYTES);

/** What the merges have done so far: how many pieces were merged, the longest in bytes (the tests' window on the work). */
export const mergeStats = { pieces: 0, longest: 0 };

/**
 * Byte-pair merging of one piece (at most PIECE_BYTES bytes): the adjacent pair of lowest rank first, the leftmost
 * of equals, as the library and tiktoken merge. Callers' text is plain text: a special token's spelling
 * (`<|endoftext|>`) is the characters it is.
 */
function merge(piece: string): number[] {
  const { ranks, pairs, byteRanks } = tables();
  const bytes = Buffer.from(piece, 'utf8');
  mergeStats.pieces++;
  mergeStats.longest = Math.max(mergeStats.longest, bytes.length);
  const whole = bytes.length > 1 ? ranks.get(bytes.toString('latin1')) : undefined;
  if (whole !== undefined) return [whole];
  let n = bytes.length;
  for (let i = 0; i < n; i++) parts[i] = byteRanks[bytes[i]!]!;
  // The rank of parts i and i + 1 joined (Infinity: not a token).
  const rankAt = (i: number) => pairs.get(parts[i]! * PAIR + parts[i + 1]!) ?? Infinity;
  for (let i = 0; i < n - 1; i++) pairRanks[i] = rankAt(i);
  for (;;) {
    let lowest = Infinity;
    let at = -1;
    for (let i = 0; i < n - 1; i++)
      if (pairRanks[i]! < lowest) {
        lowest = pairRanks[i]!;
        at = i;
      }
    if (at < 0) break;
    parts[at] = lowest;
    parts.copyWithin(at + 1, at + 2, n);
    pairRanks.copyWithin(at + 1, at + 2, n - 1);
    n--;
    if (at < n - 1) pairRanks[at] = rankAt(at);
    if (at > 0) pairRanks[at - 1] = rankAt(at - 1);
  }
  return Array.from(parts.subarray(0, n));
}

function tokensOf(piece: string): number[] {
  let ids = PIECES.get(piece);
  if (ids === undefined) {
    ids = merge(piece);
    if (piece.length <= PIECE_CACHE_LENGTH) {
      if (PIECES.size >= PIECE_CACHE_SIZE) PIECES.clear();
      PIECES.set(piece, ids);
    }
  }
  return ids;
}

/** Where the run of `piece` starting at `from` ends: at most PIECE_BYTES bytes of UTF-8, whole characters. */
function runEnd(piece: string, from: number): number {
  let bytes = 0;
  let i = from;
  while (i < piece.length) {
    const c = piece.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < piece.length && (piece.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3; // a lone surrogate is encoded as U+FFFD: 3 bytes
    if (bytes + size > PIECE_BYTES) break;
    bytes += size;
    i += pair ? 2 : 1;
  }
  return i;
}

/**
 * Calls `each` with the tokens of `text`, piece by piece (long pieces run by run), until it returns false. Every
 * operation below goes through here, so counting and encoding agree.
 */
function eachPiece(text: string, each: (ids: number[]) => boolean): void {
  SPLIT.lastIndex = 0;
  for (let m = SPLIT.exec(text); m !== null; m = SPLIT.exec(text)) {
    const piece = m[0];
    if (piece === '') {
      SPLIT.lastIndex++;
      continue;
    }
    // A UTF-16 unit is at most 3 bytes of UTF-8, so a piece this short is one run.
    if (piece.length * 3 <= PIECE_BYTES) {
      if (!each(tokensOf(piece))) return;
      continue;
    }
    for (let from = 0; from < piece.length; ) {
      const to = runEnd(piece, from);
      if (!each(tokensOf(from === 0 && to === piece.length ? piece : piece.slice(from, to)))) return;
      from = to;
    }
  }
}

/**
 * The token ids of `text`. With `atMost`, it stops once it has more than that many: a result longer than
 * `atMost` starts with the text's first tokens and says only that the text has more (work bounded by the limit
 * rather than by the text).
 */
export function encode(text: string, atMost = Infinity): number[] {
  const out: number[] = [];
  if (text)
    eachPiece(text, (ids) => {
      for (const id of ids) out.push(id);
      return out.length <= atMost;
    });
  return out;
}

/**
 * The text of token ids. The library's `decode` copies its byte buffer once per byte-level token (a run of emoji is
 * all byte-level tokens): quadratic. Its generator decodes token by token.
 */
export function decode(ids: number[]): string {
  let text = '';
  for (const part of tables().decodeGenerator(ids)) text += part;
  return text;
}

/** The number of tokens of `text`; with `atMost`, any number above `atMost` once the text is known to be longer. */
export function countTokens(text: string, atMost = Infinity): number {
  let total = 0;
  if (text)
    eachPiece(text, (ids) => {
      total += ids.length;
      return total <= atMost;
    });
  return total;
}

/** The text's tokens, each as its text (for logprobs and truncation). */
export function tokenize(text: string): string[] {
  return encode(text).map((t) => decode([t]));
}

/** The first `max` tokens of `text`, and whether it was cut. */
export function truncateTokens(text: string, max: number): { text: string; cut: boolean } {
  const tokens = encode(text, max);
  if (tokens.length <= max) return { text, cut: false };
  return { text: decode(tokens.slice(0, max)), cut: true };
}

/** The last `max` tokens of `text` (what is kept when a prompt is truncated from the front). */
export function keepLastTokens(text: string, max: number): string {
  const tokens = encode(text);
  return tokens.length <= max ? text : decode(tokens.slice(tokens.length - max));
}
