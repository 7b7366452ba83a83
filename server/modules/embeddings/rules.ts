// Module `embeddings`: the limits on `input` (the platform publishes none; these are this server's, in the spec).
import { badRequest } from '../../core/errors.ts';
import { countTokens } from '../../engines/tokens.ts';

export const MAX_INPUTS = 2048;

/** The texts to embed, in order: 1 to MAX_INPUTS, none blank, each within the model's context length in tokens. */
export function acceptInput(input: string | string[], contextLength: number | null): string[] {
  const texts = typeof input === 'string' ? [input] : input;
  const at = (i: number) => (typeof input === 'string' ? 'input' : `input[${i}]`);
  if (texts.length === 0) throw badRequest('input is an empty list: give a text, or a list of 1 to 2048 texts.', 'input', 'invalid_input');
  if (texts.length > MAX_INPUTS)
    throw badRequest(`input holds ${texts.length} texts; at most ${MAX_INPUTS} are embedded per request.`, 'input', 'too_many_inputs');
  texts.forEach((text, i) => {
    if (text.trim() === '')
      throw badRequest(`${at(i)} is empty: every text to embed needs at least one character that is not white space.`, 'input', 'invalid_input');
    // A token is at least one byte, so only a text longer in bytes than the context can exceed it; counting stops
    // past the context, so a long text costs the context's work, not its own length.
    if (contextLength !== null && Buffer.byteLength(text) > contextLength && countTokens(text, contextLength) > contextLength)
      throw badRequest(`${at(i)} is over ${contextLength} tokens long; this model reads at most ${contextLength} tokens per text.`, 'input', 'input_too_long');
  });
  return texts;
}
