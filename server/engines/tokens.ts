// Token counts. The platform's models each have their own tokenizer, which this offline server does not have; it
// counts with one real BPE tokenizer for all of them (cl100k_base, through gpt-tokenizer), so usage figures, context
// lengths and token-based rate limits are real counts of the text, close to (not equal to) each model's own.
import { decode, encode as encodeWith } from 'gpt-tokenizer/encoding/cl100k_base';

export const TOKENIZER = 'cl100k_base';

// Text that spells a special token (`<|endoftext|>`) is a caller's ordinary text, not a control token.
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** The token ids of `text`. */
export const encode = (text: string): number[] => (text ? encodeWith(text, AS_TEXT) : []);

export { decode };

export function countTokens(text: string): number {
  return encode(text).length;
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
