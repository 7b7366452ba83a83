// The rules of a queue job's submission: the queue's name, the deprecation notice of an aliased model, which
// queues have a built-in worker, and the payload a built-in chat worker takes (checked before anything is stored).
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { canonicalModelId, findModel } from '../models/index.ts';

export const MAX_MODEL_LENGTH = 256;

/** The queue a model name addresses (an alias is its canonical model's queue), with the notice an alias earns. */
export function queueOf(model: string, param = 'model'): { model: string; warnings: string[] } {
  // In characters (code points), as the contract's maxLength counts them.
  const length = [...model].length;
  if (length < 1 || length > MAX_MODEL_LENGTH) throw badRequest(`'${param}' must be a model name of 1 to ${MAX_MODEL_LENGTH} characters.`, param);
  const canonical = canonicalModelId(model);
  return { model: canonical, warnings: canonical === model ? [] : [`'${model}' is a deprecated id of the model '${canonical}': submit to '${canonical}'.`] };
}

/** Model types the built-in worker runs, through the chat engine. */
const CHAT_TYPES = new Set(['chat', 'language']);

/** The catalogue (or the project's own) chat model a queue's built-in worker runs; null: no built-in worker. */
export async function builtInModel(db: Db | Tx, projectId: string, model: string): Promise<Model | null> {
  const m = await findModel(db, projectId, model);
  return m && CHAT_TYPES.has(m.type) ? m : null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A built-in chat job's payload as a chat completion request; refuses (400 naming `payload.<field>`) what it cannot run. */
export function chatRequestOf(model: string, payload: Record<string, unknown>): Record<string, unknown> {
  const { messages, max_tokens, stop, n, seed } = payload;
  if (!Array.isArray(messages) || messages.length === 0)
    throw badRequest("A chat model's job needs 'payload.messages': a non-empty list of {role, content}.", 'payload.messages');
  messages.forEach((m, i) => {
    if (!isObject(m) || typeof m.role !== 'string' || typeof m.content !== 'string') {
      throw badRequest(`'payload.messages.${i}' must be {role, content} with string values.`, `payload.messages.${i}`);
    }
  });
  if (max_tokens !== undefined && !(Number.isInteger(max_tokens) && (max_tokens as number) >= 1))
    throw badRequest("'payload.max_tokens' must be a positive integer.", 'payload.max_tokens');
  const stops = stop === undefined ? [] : typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(stops) || !stops.every((s) => typeof s === 'string'))
    throw badRequest("'payload.stop' must be a string or a list of strings.", 'payload.stop');
  if (n !== undefined && !(Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 16))
    throw badRequest("'payload.n' must be an integer from 1 to 16.", 'payload.n');
  if (seed !== undefined && !Number.isInteger(seed)) throw badRequest("'payload.seed' must be an integer.", 'payload.seed');
  return {
    model,
    messages: (messages as { role: string; content: string }[]).map((m) => ({ role: m.role, content: m.content })),
    ...(max_tokens === undefined ? {} : { max_tokens }),
    stop: stops,
    n: (n as number | undefined) ?? 1,
    ...(seed === undefined ? {} : { seed }),
  };
}
