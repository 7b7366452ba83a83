// Chat completions and completions answered by an inference checkpoint's weights (the local RL engine's small model):
// the text is really sampled from the trained model, with the request's temperature, top_p, top_k, stop, seed, n
// and max_tokens, and its logprobs are the model's. A chat's messages are the model's input as `<role>: <text>`
// lines (the local chat engine's transcript) followed by `\nassistant:`; generation ends at the end-of-text token,
// at a stop string, at `\nuser:` (the next turn of that transcript) or at max_tokens (default 256). The answer says
// what answered: `system_fingerprint` is the engine's, and `warnings` name the checkpoint and the model.
import { badRequest } from '../../core/errors.ts';
import { type Choice, type Generation, type TextEngine, type TextOperation, textAnswer, transcript } from '../chat.ts';
import { decode, encode } from '../tokens.ts';
import { LOCAL_RL_ENGINE } from './engine.ts';
import { END_OF_TEXT } from './net.ts';
import { random } from './random.ts';
import { sampleSequences, topTokens } from './sampling.ts';
import { decodeSnapshot } from './state.ts';

const DEFAULT_MAX_TOKENS = 256;
const MAX_SAMPLED = 16_384;
const NEXT_TURN = '\nuser:';

// biome-ignore lint/suspicious/noExplicitAny: a request body already validated against the contract.
type Body = Record<string, any>;

const stopsOf = (stop: unknown): string[] => (stop == null ? [] : (typeof stop === 'string' ? [stop] : (stop as string[])).filter((s) => s.length > 0));

/** How many alternatives logprobs ask for; null: none asked. */
function topAsked(op: TextOperation, body: Body): number | null {
  const lp = body.logprobs;
  if (op === 'chat') return lp === true ? (body.top_logprobs ?? 0) : typeof lp === 'number' && lp > 0 ? (body.top_logprobs ?? lp) : null;
  return typeof lp === 'number' && lp > 0 ? lp : null;
}

export function rlTextEngine(checkpoint: Uint8Array, about: string): TextEngine {
  const { weights } = decodeSnapshot(checkpoint);
  return {
    runtime: { engineType: 'local', engineVersion: LOCAL_RL_ENGINE, functionCallingSupported: false, structuredOutputSupported: false },
    async run(op, body, served) {
      const promptText = op === 'chat' ? `${transcript(body.messages, body.tools)}\nassistant:` : String(body.prompt);
      const promptParam = op === 'chat' ? 'messages' : 'prompt';
      const ctx = served.contextLength ?? 2048;
      const promptIds = encode(promptText, ctx);
      if (promptIds.length >= ctx)
        throw badRequest(`The prompt is at least ${promptIds.length} tokens; the model's context length is ${ctx}.`, promptParam, 'context_length_exceeded');
      const asked: number | undefined = body.max_tokens ?? body.max_completion_tokens ?? undefined;
      if (asked !== undefined && asked < 0) throw badRequest('max_tokens must be 0 or more.', 'max_tokens');
      const maxTokens = Math.min(asked ?? DEFAULT_MAX_TOKENS, ctx - promptIds.length);
      const stops = [...stopsOf(body.stop), ...(op === 'chat' ? [NEXT_TURN] : [])];
      const seed = Number.isInteger(body.seed) ? String(body.seed) : String(random('rl-chat', served.id, Math.random()).next());
      const params = {
        maxTokens,
        temperature: body.temperature ?? 1,
        topP: body.top_p ?? 1,
        topK: body.top_k ?? -1,
        stop: stops,
        seed,
      };
      const top = topAsked(op, body);
      const n: number = body.n ?? 1;
      // Sampling runs on this CPU: one request samples at most as many tokens as an RL sample operation.
      if (n * maxTokens > MAX_SAMPLED)
        throw badRequest(
          `n (${n}) x max_tokens (${maxTokens}) is more than ${MAX_SAMPLED.toLocaleString('en-US')} tokens to sample in one request from an RL checkpoint's model.`,
          asked === undefined ? 'n' : 'max_tokens',
        );
      const choices: Choice[] = [];
      for (let i = 0; i < n; i++) {
        const [q] = await sampleSequences(weights, promptIds, 1, params, `choice-${i}`);
        let ids = q!.tokens.filter((t) => t !== END_OF_TEXT);
        let text = decode(ids);
        // A stop string ends the text before it; the tokens are those of the text kept.
        const at = Math.min(...stops.map((s) => text.indexOf(s)).filter((k) => k >= 0));
        if (Number.isFinite(at)) {
          text = text.slice(0, at);
          while (ids.length && decode(ids).length > at) ids = ids.slice(0, -1);
        }
        const logprobs = ids.map((id, k) => ({
          logprob: q!.logprobs[k]!,
          top: top ? topTokens(weights, [...promptIds, ...ids.slice(0, k)], top) : [{ id, logprob: q!.logprobs[k]! }],
        }));
        choices.push({ ids, text, completionTokens: ids.length, finishReason: q!.stop === 'stop' ? 'stop' : 'length', logprobs });
      }
      const g: Generation = {
        promptText,
        promptIds,
        choices,
        warnings: [...served.warnings, `Answered by ${about}, sampled on this server's CPU: this server's small local model, not a hosted model.`],
      };
      return textAnswer(op, body, served, g, LOCAL_RL_ENGINE);
    },
  };
}
