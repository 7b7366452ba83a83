// Token counts. The platform's models each have their own tokenizer, which this offline server does not have; it
// counts with one real BPE tokenizer for all of them (cl100k_base, through gpt-tokenizer), so usage figures, context
// lengths and token-based rate limits are real counts of the text, close to (not equal to) each model's own.
import { countTokens as count, decode, encode as encodeWith } from 'gpt-tokenizer/encoding/cl100k_base';
import { CL100K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';

export const TOKENIZER = 'cl100k_base';

// Callers' text is plain text: a special token's spelling in it (`<|endoftext|>`) is counted as the characters it
// is, where the library's default would throw.
const PLAIN = { disallowedSpecial: new Set<string>() };

// The tokenizer first splits text into pieces (words with their leading space, runs of digits, punctuation, white
// space) and encodes each piece on its own, so a text's count is the sum of its pieces' counts. Pieces recur (a
// vocabulary is small), so their counts are remembered, up to a bound: counting a thousand rerank documents costs
// a split and lookups rather than a thousand encodings. Only short pieces are kept, so the memory stays small.
const PIECES = new Map<string, number>();
const PIECE_CACHE_SIZE = 100_000;
const PIECE_CACHE_LENGTH = 64;
// Its own copy of the splitting expression, run with exec: matchAll would copy the (large) expression per call.
const SPLIT = new RegExp(CL100K_TOKEN_SPLIT_REGEX.source, 'gu');

/** The token ids of `text`. */
export const encode = (text: string): number[] => (text ? encodeWith(text, PLAIN) : []);

export { decode };

export function countTokens(text: string): number {
  if (!text) return 0;
  let total = 0;
  SPLIT.lastIndex = 0;
  for (let m = SPLIT.exec(text); m !== null; m = SPLIT.exec(text)) {
    const piece = m[0];
    if (piece === '') {
      SPLIT.lastIndex++;
      continue;
    }
    let n = PIECES.get(piece);
    if (n === undefined) {
      n = count(piece, PLAIN);
      if (piece.length <= PIECE_CACHE_LENGTH) {
        if (PIECES.size >= PIECE_CACHE_SIZE) PIECES.clear();
        PIECES.set(piece, n);
      }
    }
    total += n;
  }
  return total;
}

/** The text's tokens, each as its text (for logprobs and truncation). */
export function tokenize(text: string): string[] {
  return encode(text).map((t) => decode([t]));
}

/** The first `max` tokens of `text`, and whether it was cut. */
export function truncateTokens(text: string, max: number): { text: string; cut: boolean } {
  const tokens = encode(text);
  if (tokens.length <= max) return { text, cut: false };
  return { text: decode(tokens.slice(0, max)), cut: true };
}

/** The last `max` tokens of `text` (what is kept when a prompt is truncated from the front). */
export function keepLastTokens(text: string, max: number): string {
  const tokens = encode(text);
  return tokens.length <= max ? text : decode(tokens.slice(tokens.length - max));
}
