// Module `inference`: chat completions, answered by whatever serves the `model` (targets.ts) through the chat
// engine interface (a deterministic local engine here).
import { unixSeconds } from '../../core/clock.ts';
import { badRequest } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { localChatEngine, type ChatEngine } from '../../engines/chat.ts';
import { reply } from '../../http/reply.ts';
import type { Context, RequestBody } from '../types.ts';
import { resolveTarget } from './targets.ts';
import { chatCompletionWire } from './wire.ts';

const engine: ChatEngine = localChatEngine;

type Message = RequestBody<'createChatCompletion'>['messages'][number];

const textOf = (content: Message['content']): string => (content == null ? '' : typeof content === 'string' ? content : content.map((p) => p.text).join('\n'));

export async function createChatCompletion({ db, clock, body, identity }: Context<'createChatCompletion'>) {
  if (body.stream === true) {
    throw badRequest('Streaming is not supported by this server: send stream false (or omit it) for the whole answer.', 'stream', 'stream_not_supported');
  }
  const target = await resolveTarget(db, identity, body.model);
  const result = await engine.complete({
    model: target.model,
    adapter: target.adapter,
    messages: body.messages.map((m) => ({ role: m.role, content: textOf(m.content) })),
    maxTokens: body.max_tokens,
    stop: body.stop === undefined ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop,
    n: body.n ?? 1,
    seed: body.seed,
  });
  const now = clock.now();
  // `x-served-by` names the deployment (or v1 endpoint) that answered.
  return reply.json(chatCompletionWire(newId('chatcmpl', now), unixSeconds(now), body.model, body.seed, result), { headers: { 'x-served-by': target.servedBy } });
}
