// Module `inference`: an upstream engine's answer in this contract's shape. The local engine already answers in it
// (engines/chat.ts); an upstream OpenAI-compatible server may add fields (vLLM's `stop_reason`, `service_tier`,
// ...) or leave some out, so its answer keeps the fields the contract names and fills the required ones it lacks.
// biome-ignore lint/suspicious/noExplicitAny: a request or engine body, already validated against the contract.
type Body = Record<string, any>;

const FINISH = new Set(['stop', 'eos', 'length', 'tool_calls', 'function_call']);
const finish = (r: unknown) => (typeof r === 'string' && FINISH.has(r) ? r : 'stop');
const pick = (o: Body | null | undefined, keys: string[]) => Object.fromEntries(keys.filter((k) => o?.[k] !== undefined).map((k) => [k, o![k]]));

function usage(u: Body | null | undefined) {
  const prompt = Number(u?.prompt_tokens ?? 0);
  const completion = Number(u?.completion_tokens ?? 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Number(u?.total_tokens ?? prompt + completion) };
}

const toolCalls = (calls: Body[] | undefined) =>
  calls?.map((c, i) => ({
    index: Number.isInteger(c.index) ? c.index : i,
    id: String(c.id ?? ''),
    type: 'function' as const,
    function: { name: String(c.function?.name ?? ''), arguments: String(c.function?.arguments ?? '') },
  }));

export function fromUpstream(op: 'chat' | 'completion', b: Body): Body {
  const common = {
    id: String(b.id ?? ''),
    created: Number.isInteger(b.created) ? b.created : 0,
    model: b.model,
    prompt: Array.isArray(b.prompt) ? b.prompt : [],
    usage: usage(b.usage),
    system_fingerprint: typeof b.system_fingerprint === 'string' ? b.system_fingerprint : 'upstream',
    ...(Array.isArray(b.warnings) ? { warnings: b.warnings } : {}),
  };
  if (op === 'chat') {
    return {
      ...common,
      object: 'chat.completion',
      choices: (b.choices as Body[]).map((c, index) => ({
        index: Number.isInteger(c.index) ? c.index : index,
        message: {
          role: 'assistant',
          content: c.message?.content ?? null,
          ...(c.message?.tool_calls?.length ? { tool_calls: toolCalls(c.message.tool_calls) } : {}),
          ...pick(c.message, ['reasoning']),
        },
        finish_reason: finish(c.finish_reason),
        logprobs: c.logprobs && typeof c.logprobs === 'object' ? c.logprobs : null,
        ...(Number.isInteger(c.seed) ? { seed: c.seed } : {}),
      })),
    };
  }
  return {
    ...common,
    object: 'text.completion',
    choices: (b.choices as Body[]).map((c, index) => ({
      index: Number.isInteger(c.index) ? c.index : index,
      text: String(c.text ?? ''),
      finish_reason: finish(c.finish_reason),
      ...(c.logprobs && typeof c.logprobs === 'object' ? { logprobs: c.logprobs } : {}),
      ...(Number.isInteger(c.seed) ? { seed: c.seed } : {}),
    })),
  };
}
