// Module `inference`: engine results -> wire shapes (the OpenAI chat completion shape both official clients parse).
import type { ChatResult } from '../../engines/chat.ts';
import type { Wire } from '../types.ts';

export function chatCompletionWire(id: string, createdSeconds: number, model: string, seed: number | undefined, r: ChatResult): Wire<'ChatCompletion'> {
  return {
    id,
    object: 'chat.completion',
    created: createdSeconds,
    model,
    prompt: [],
    choices: r.choices.map((c, index) => ({
      index,
      message: { role: 'assistant', content: c.text },
      finish_reason: c.finishReason,
      logprobs: null,
      seed: seed ?? null,
    })),
    usage: { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens },
    system_fingerprint: r.fingerprint,
  };
}
