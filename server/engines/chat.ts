// The text-generation engine interface (capability `chat`: chat completions and completions) and its two engines:
// the deterministic local one below, and the upstream one (an OpenAI-compatible server, engines/upstream.ts). Both
// speak the operations' wire shapes, so an upstream's answer is relayed rather than rebuilt.
//
// The local engine has no model weights. It is greedy with one candidate per step, so what it reports follows from
// that: the text says it is local, every emitted token has log probability 0, and sampling parameters cannot change
// the answer. Tokens are counted with a real tokenizer (engines/tokens.ts); JSON output and tool arguments are
// sampled from the caller's schema and checked with Ajv (in the schema's own draft, json-schema.ts) before they are
// sent.
import { createHash } from 'node:crypto';
import { apiError, badRequest } from '../core/errors.ts';
import { offLoop } from './pool.ts';
import type { SchemaOutcome } from './pool-tasks.ts';
import { schemaInPrompt } from './prompt-schema.ts';
import type { Route, UpstreamRoute } from './routes.ts';
import { beyondSchemaBounds } from './sample-bounds.ts';
import { countTokens, decode, encode } from './tokens.ts';
import { upstreamEvents, upstreamFetch } from './upstream.ts';

export type TextOperation = 'chat' | 'completion';

/** What serves the request, as the inference module resolved it. */
export interface Served {
  /** The `model` string of the request, which the answer carries back. */
  requested: string;
  /** The model the replica runs (catalogue id or an upload's id), and the LoRA adapter on top, if any. */
  model: string;
  adapter?: string;
  /** The model's context length in tokens; null when the catalogue does not know it (no check then). */
  contextLength: number | null;
  id: string;
  created: number;
  /** Notes for `warnings` found by the caller (e.g. an unapplied safety model). */
  warnings: string[];
}

// biome-ignore lint/suspicious/noExplicitAny: a request body, already validated against the contract.
type Body = Record<string, any>;
export type Outcome = { kind: 'json'; body: Body } | { kind: 'stream'; chunks: AsyncIterable<Body> };

/** What the engine is and what it can do: reported as a v2 deployment's `runtimeInfo`. */
export interface EngineRuntime {
  engineType: string;
  engineVersion: string;
  functionCallingSupported: boolean;
  structuredOutputSupported: boolean;
}

export interface TextEngine {
  runtime: EngineRuntime;
  /** Everything that can fail before an answer starts fails here (so a stream never starts with an error). */
  run(op: TextOperation, body: Body, served: Served): Promise<Outcome>;
}

const LOCAL_RUNTIME: EngineRuntime = {
  engineType: 'local',
  engineVersion: 'local-chat-engine-2',
  functionCallingSupported: true,
  structuredOutputSupported: true,
};

// ---- the local engine --------------------------------------------------------------------------------------------

interface ToolCallOut {
  index: number;
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface Choice {
  /** The emitted tokens (empty for a tool call). */
  ids: number[];
  text: string;
  toolCall?: ToolCallOut;
  completionTokens: number;
  finishReason: 'stop' | 'length' | 'tool_calls';
  /**
   * Per emitted token, its log probability and the most likely tokens at its step (a model that has weights: the
   * RL engine's). Absent: the local engine's one candidate per step, probability 1.
   */
  logprobs?: { logprob: number; top: { id: number; logprob: number }[] }[];
}

export interface Generation {
  promptText: string;
  promptIds: number[];
  choices: Choice[];
  warnings: string[];
}

/**
 * The JSON of a value valid against `schema` (sampled, then checked), or a 400 naming `param`. A schema beyond the
 * size bounds is refused here, in one pass over it, before anything else is done with it; the compiling, sampling
 * and checking run on a worker thread (pool.ts), so however long Ajv takes the event loop is not held. Done once per
 * request: every choice carries the same sample.
 */
async function sampleValid(schema: object, param: string, what: string): Promise<string> {
  const tooLarge = (why: string) =>
    badRequest(`The JSON Schema for ${what} asks for more than the local engine samples: ${why}.`, param, 'unsupported_json_schema');
  const huge = beyondSchemaBounds(schema);
  if (huge) throw tooLarge(huge);
  const outcome = await offLoop<SchemaOutcome>('schema', { schema });
  if ('json' in outcome) return outcome.json;
  if (outcome.problem === 'invalid') throw badRequest(`The JSON Schema for ${what} cannot be used: ${outcome.why}.`, param, 'invalid_json_schema');
  if (outcome.problem === 'beyond') throw tooLarge(outcome.why);
  throw badRequest(
    `The local engine could not produce ${what} valid against the given JSON Schema (it samples the schema and checks the sample; this schema's constraints are beyond it).`,
    param,
    'unsupported_json_schema',
  );
}

/** What the output is made of when a schema shapes it: a forced tool call's arguments, response_format's JSON, or
 * the JSON a schema in the prompt asks for. */
interface Shaped {
  forced: { name: string; parameters: object } | null;
  /** The sampled arguments (forced) or JSON object (response_format), as JSON text. */
  json?: string;
  /** The JSON a schema in the messages asks for, and whether the prompt wants it in a fenced block. */
  prompted?: { json: string; fenced: boolean };
}

async function shapedOutput(op: TextOperation, body: Body): Promise<Shaped> {
  const forced = op === 'chat' ? forcedFunction(body) : null;
  if (forced) return { forced, json: await sampleValid(forced.parameters, 'tools', `arguments for '${forced.name}'`) };
  const format = op === 'chat' ? (body.response_format as Body | undefined) : undefined;
  if (format?.type === 'json_schema' || (format?.type === 'json_object' && format.schema)) {
    const schema = format.type === 'json_schema' ? (format.json_schema?.schema ?? { type: 'object' }) : format.schema;
    return { forced, json: await sampleValid(schema, 'response_format', 'JSON') };
  }
  // A schema in the messages rather than in `response_format` (prompt-schema.ts): with `json_object` and no schema of
  // its own, or with no `response_format` and a message mentioning JSON. One the engine cannot sample is a 400 naming
  // `messages` when `json_object` asked for JSON, else the usual text answers.
  const jsonAsked = format?.type === 'json_object';
  if (op !== 'chat' || (format !== undefined && !jsonAsked)) return { forced };
  const found = schemaInPrompt(
    (body.messages as Body[]).map((m) => textOfContent(m.content).text),
    jsonAsked,
  );
  if (!found) return { forced };
  try {
    return { forced, prompted: { json: await sampleValid(found.schema, 'messages', 'the JSON the prompt asks for'), fenced: found.fenced } };
  } catch (e) {
    if (jsonAsked) throw e;
    return { forced };
  }
}

const textOfContent = (content: unknown): { text: string; skipped: number } => {
  if (content == null) return { text: '', skipped: 0 };
  if (typeof content === 'string') return { text: content, skipped: 0 };
  const parts = content as { type: string; text?: string }[];
  return {
    text: parts
      .filter((p) => p.type === 'text')
      .map((p) => p.text ?? '')
      .join('\n'),
    skipped: parts.filter((p) => p.type !== 'text').length,
  };
};

/** Each message as one line `<role>: <text>` (tool calls as JSON), then the tools' definitions. */
export function transcript(messages: Body[], tools: unknown): string {
  const lines = messages.map((m) => {
    let text = textOfContent(m.content).text;
    if (m.tool_calls?.length) text += (text ? '\n' : '') + JSON.stringify(m.tool_calls);
    if (m.function_call) text += (text ? '\n' : '') + JSON.stringify(m.function_call);
    return `${m.role}: ${text}`;
  });
  if (Array.isArray(tools) && tools.length) lines.push(`tools: ${JSON.stringify(tools)}`);
  return lines.join('\n');
}

/** The prompt's token count as the local engine counts it (a chat's transcript, or a completion's prompt). */
export const promptTokens = (op: TextOperation, body: Body): number => countTokens(op === 'chat' ? transcript(body.messages, body.tools) : String(body.prompt));

const stopsOf = (stop: unknown): string[] => (stop == null ? [] : (typeof stop === 'string' ? [stop] : (stop as string[])).filter((s) => s.length > 0));

function hashId(prefix: string, ...parts: unknown[]): string {
  return `${prefix}${createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)}`;
}

/** Which function a chat request forces, if any (`tool_choice`, or the deprecated `function_call`). */
function forcedFunction(body: Body): { name: string; parameters: object } | null {
  const tools: { name: string; parameters?: object }[] = [
    ...((body.tools as Body[] | null) ?? []).map((t, i) => {
      if (t?.type !== 'function' || typeof t.function?.name !== 'string' || !t.function.name) {
        throw badRequest(`tools[${i}] must be {"type": "function", "function": {"name": ..., "parameters": {...}}}.`, 'tools', 'invalid_tool');
      }
      return t.function;
    }),
    ...((body.functions as Body[] | undefined) ?? []),
  ];
  const choice = body.tool_choice ?? body.function_call;
  const param = body.tool_choice !== undefined ? 'tool_choice' : 'function_call';
  if (choice == null || choice === 'auto' || choice === 'none') return null;
  const find = (name: string) => {
    const hit = tools.find((t) => t.name === name);
    if (!hit)
      throw badRequest(
        `${param} names '${name}', which is not one of the given tools (${tools.map((t) => t.name).join(', ') || 'none given'}).`,
        param,
        'unknown_tool',
      );
    return hit;
  };
  let tool: Body;
  if (choice === 'required') {
    if (!tools.length) throw badRequest(`${param} 'required' needs at least one tool in 'tools'.`, param, 'no_tools');
    tool = tools[0]!;
  } else if (typeof choice === 'string') {
    throw badRequest(`${param} must be 'none', 'auto', 'required' or {"type": "function", "function": {"name": ...}}; got '${choice}'.`, param);
  } else tool = find(String(choice.function?.name ?? choice.name ?? ''));
  return { name: tool.name, parameters: tool.parameters ?? { type: 'object' } };
}

function generate(op: TextOperation, body: Body, served: Served, shaped: Shaped): Generation {
  const warnings = [...served.warnings];
  const n = body.n ?? 1;
  const maxTokens: number | undefined = body.max_tokens ?? body.max_completion_tokens ?? undefined;
  if (maxTokens !== undefined && maxTokens < 0) throw badRequest('max_tokens must be 0 or more.', 'max_tokens');
  const truncate = body.context_length_exceeded_behavior === 'truncate';
  const promptParam = op === 'chat' ? 'messages' : 'prompt';
  const ctx = served.contextLength;
  if (ctx !== null && maxTokens !== undefined && maxTokens > ctx) {
    throw badRequest(`max_tokens (${maxTokens}) is more than the context length of ${served.model} (${ctx} tokens).`, 'max_tokens', 'context_length_exceeded');
  }
  const budget = ctx === null ? Infinity : ctx - (maxTokens ?? 0);

  // The prompt as counted, truncated from its start when asked and needed.
  let messages: Body[] = op === 'chat' ? body.messages : [];
  let promptText = op === 'chat' ? transcript(messages, body.tools) : (body.prompt as string);
  // Without truncation, counting stops past the budget: a refused prompt costs the budget's work, not its length.
  let promptIds = encode(promptText, truncate ? Infinity : budget);
  if (promptIds.length > budget) {
    const overflow = `The prompt is ${truncate ? promptIds.length : `over ${budget}`} tokens; with max_tokens ${maxTokens ?? 0} the context length of ${served.model} (${ctx} tokens) allows ${budget}.`;
    if (!truncate) throw badRequest(`${overflow} Shorten it, or send context_length_exceeded_behavior: truncate.`, promptParam, 'context_length_exceeded');
    if (op === 'chat') {
      // The oldest non-system messages go first; the last message always stays. Each message's share (its line and
      // the line break) is counted once and the oldest dropped until the rest fits, so a long conversation costs
      // one pass, not a count of the whole transcript per message dropped (quadratic); the rest is then counted
      // exactly, and dropping goes on one at a time should the shares have been off by a token.
      let total = promptIds.length;
      const kept = messages.filter((m, k) => {
        if (total <= budget || m.role === 'system' || k === messages.length - 1) return true;
        total -= countTokens(transcript([m], undefined)) + 1;
        return false;
      });
      if (kept.length < messages.length) {
        messages = kept;
        promptText = transcript(messages, body.tools);
        promptIds = encode(promptText);
      }
      while (promptIds.length > budget) {
        const i = messages.findIndex((m, k) => m.role !== 'system' && k < messages.length - 1);
        if (i < 0) break;
        messages = messages.filter((_, k) => k !== i);
        promptText = transcript(messages, body.tools);
        promptIds = encode(promptText);
      }
    }
    if (promptIds.length > budget) {
      promptIds = promptIds.slice(promptIds.length - Math.max(0, budget));
      promptText = decode(promptIds);
    }
    warnings.push(`The prompt was truncated from its start to ${promptIds.length} tokens to fit the context length (${ctx}).`);
  }
  const room = ctx === null ? Infinity : ctx - promptIds.length;
  const limit = Math.min(maxTokens ?? Infinity, room);

  const skipped = op === 'chat' ? messages.reduce((sum, m) => sum + textOfContent(m.content).skipped, 0) : 0;
  if (skipped) warnings.push(`${skipped} image, video or audio content part(s) were not read: the local engine reads text only.`);

  const served_ = served.adapter ? `${served.model} with the LoRA adapter ${served.adapter}` : served.model;
  const { forced } = shaped;
  const format = op === 'chat' ? (body.response_format as Body | undefined) : undefined;
  const stops = stopsOf(body.stop);
  const lastUser = textOfContent([...messages].reverse().find((m) => m.role === 'user')?.content).text;

  const choices = Array.from({ length: n }, (_, i): Choice => {
    if (forced) {
      const args = shaped.json!;
      const id = hashId('call_', served.requested, promptText, forced.name, i);
      return {
        ids: [],
        text: '',
        toolCall: { index: 0, id, type: 'function', function: { name: forced.name, arguments: args } },
        completionTokens: encode(forced.name).length + encode(args).length,
        finishReason: 'tool_calls',
      };
    }
    let text: string;
    if (shaped.json !== undefined) {
      text = shaped.json;
    } else if (shaped.prompted) {
      text = shaped.prompted.fenced ? `\`\`\`json\n${shaped.prompted.json}\n\`\`\`` : shaped.prompted.json;
    } else if (format?.type === 'json_object') {
      text = JSON.stringify({
        engine: 'local',
        model: served_,
        note: 'No model weights run here: this object is from the deterministic local engine.',
        last_message: lastUser,
        ...(n > 1 ? { choice: i + 1 } : {}),
      });
    } else if (op === 'chat') {
      text =
        `[local engine] This answer comes from this server's deterministic local chat engine, not from ${served_}: ` +
        `no model weights run here. Your last message was: "${lastUser}"` +
        (n > 1 ? ` (choice ${i + 1} of ${n})` : '');
    } else {
      text =
        ` [local engine] This completion comes from this server's deterministic local engine, not from ${served_}: ` +
        `no model weights run here. The prompt ended with: "${promptText.slice(-200)}"` +
        (n > 1 ? ` (choice ${i + 1} of ${n})` : '');
    }
    let finishReason: Choice['finishReason'] = 'stop';
    const stopAt = Math.min(...stops.map((s) => text.indexOf(s)).filter((k) => k >= 0));
    if (Number.isFinite(stopAt)) text = text.slice(0, stopAt);
    let ids = encode(text, limit);
    if (ids.length > limit) {
      ids = ids.slice(0, limit);
      text = decode(ids);
      finishReason = 'length';
    }
    return { ids, text, completionTokens: ids.length, finishReason };
  });
  return { promptText, promptIds, choices, warnings };
}

const bytesOf = (token: string) => [...Buffer.from(token, 'utf8')];

/** Logprobs of a choice's emitted tokens (`at`: only the one at that index): the model's, or the local engine's 0 (its one candidate). */
function logprobsOf(c: Choice, top: number | null, at?: number) {
  const ids = at === undefined ? c.ids : [c.ids[at]!];
  const steps = ids.map((id, k) => c.logprobs?.[at ?? k] ?? { logprob: 0, top: [{ id, logprob: 0 }] });
  const tokens = ids.map((t) => decode([t]));
  return {
    tokens,
    token_ids: ids,
    token_logprobs: steps.map((s) => s.logprob),
    ...(top === null
      ? {}
      : {
          content: tokens.map((token, k) => ({
            token,
            logprob: steps[k]!.logprob,
            bytes: bytesOf(token),
            top_logprobs: steps[k]!.top.slice(0, top).map((alt) => {
              const text = decode([alt.id]);
              return { token: text, logprob: alt.logprob, bytes: bytesOf(text) };
            }),
          })),
        }),
  };
}

/** Whether (and how many alternatives) logprobs were asked for; null: not asked. */
function logprobsAsked(op: TextOperation, body: Body): number | null {
  const lp = body.logprobs;
  if (op === 'chat') {
    if (lp === true) return body.top_logprobs ?? 0;
    if (typeof lp === 'number' && lp > 0) return body.top_logprobs ?? lp;
    return null;
  }
  return typeof lp === 'number' && lp > 0 ? lp : null;
}

function usageOf(g: Generation) {
  const completion = g.choices.reduce((sum, c) => sum + c.completionTokens, 0);
  return { prompt_tokens: g.promptIds.length, completion_tokens: completion, total_tokens: g.promptIds.length + completion };
}

function localJson(op: TextOperation, body: Body, served: Served, g: Generation, fingerprint: string): Body {
  const top = logprobsAsked(op, body);
  const seed = Number.isInteger(body.seed) ? { seed: body.seed as number } : {};
  const prompt = body.echo ? [{ text: g.promptText, logprobs: { tokens: g.promptIds.map((t) => decode([t])), token_ids: g.promptIds } }] : [];
  const common = { id: served.id, created: served.created, model: served.requested, prompt };
  const tail = {
    usage: usageOf(g),
    system_fingerprint: fingerprint,
    ...(g.warnings.length ? { warnings: g.warnings.map((message) => ({ message })) } : {}),
  };
  if (op === 'chat') {
    return {
      ...common,
      object: 'chat.completion',
      choices: g.choices.map((c, index) => ({
        index,
        message: c.toolCall ? { role: 'assistant', content: null, tool_calls: [c.toolCall] } : { role: 'assistant', content: c.text },
        finish_reason: c.finishReason,
        logprobs: top === null || c.toolCall ? null : logprobsOf(c, top),
        ...seed,
      })),
      ...tail,
    };
  }
  return {
    ...common,
    object: 'text.completion',
    choices: g.choices.map((c, index) => ({
      index,
      text: c.text,
      finish_reason: c.finishReason,
      ...(top === null ? {} : { logprobs: logprobsOf(c, null) }),
      ...seed,
    })),
    ...tail,
  };
}

async function* localChunks(op: TextOperation, body: Body, served: Served, g: Generation, fingerprint: string): AsyncGenerator<Body> {
  const top = logprobsAsked(op, body);
  const seed = Number.isInteger(body.seed) ? { seed: body.seed as number } : {};
  const includeUsage = body.stream_options?.include_usage === true;
  const base = { id: served.id, created: served.created, model: served.requested };
  if (op === 'chat') {
    const chunk = (choices: Body[], usage: Body | null = null) => ({
      ...base,
      object: 'chat.completion.chunk',
      system_fingerprint: fingerprint,
      choices,
      usage,
    });
    for (const [index, c] of g.choices.entries()) {
      yield chunk([{ index, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }]);
      if (c.toolCall) yield chunk([{ index, delta: { role: 'assistant', content: null, tool_calls: [c.toolCall] }, finish_reason: null, logprobs: null }]);
      for (const [k, id] of c.ids.entries()) {
        yield chunk([
          { index, delta: { role: 'assistant', content: decode([id]) }, finish_reason: null, logprobs: top === null ? null : logprobsOf(c, top, k) },
        ]);
      }
      yield chunk([{ index, delta: { role: 'assistant' }, finish_reason: c.finishReason, logprobs: null, ...seed }]);
    }
    if (includeUsage) yield chunk([], usageOf(g));
    return;
  }
  const chunk = (index: number, k: number | null, finish: string | null, usage: Body | null = null) => {
    const c = g.choices[index]!;
    const id = k === null ? null : c.ids[k]!;
    const logprob = k === null ? 0 : (c.logprobs?.[k]?.logprob ?? 0);
    return {
      ...base,
      object: 'completion.chunk',
      token: id === null ? { id: -1, text: '', logprob: 0, special: true } : { id, text: decode([id]), logprob, special: false },
      choices: [
        {
          index,
          text: id === null ? '' : decode([id]),
          finish_reason: finish,
          ...(top === null ? {} : { logprobs: k === null ? null : logprobsOf(c, null, k) }),
        },
      ],
      usage,
      finish_reason: finish,
      ...seed,
    };
  };
  for (const [index, c] of g.choices.entries()) {
    for (const k of c.ids.keys()) yield chunk(index, k, null);
    yield chunk(index, null, c.finishReason);
  }
  if (includeUsage)
    yield { ...base, object: 'completion.chunk', token: { id: -1, text: '', logprob: 0, special: true }, choices: [], usage: usageOf(g), finish_reason: null };
}

/** A generation in the operation's wire shape: whole, or (`stream`) as the chunks of Server-Sent Events. */
export function textAnswer(op: TextOperation, body: Body, served: Served, g: Generation, fingerprint: string): Outcome {
  return body.stream
    ? { kind: 'stream', chunks: localChunks(op, body, served, g, fingerprint) }
    : { kind: 'json', body: localJson(op, body, served, g, fingerprint) };
}

export const localTextEngine: TextEngine = {
  runtime: LOCAL_RUNTIME,
  async run(op, body, served) {
    return textAnswer(op, body, served, generate(op, body, served, await shapedOutput(op, body)), LOCAL_RUNTIME.engineVersion);
  },
};

/**
 * A whole chat completion from the local engine for the server's own callers (the queue's built-in workers, the
 * local judge): `body` in the operation's wire shape, the answer too. No context-length check (no catalogue here).
 */
export async function localChat(model: string, body: Body): Promise<Body> {
  const served: Served = { requested: model, model, contextLength: null, id: 'local', created: 0, warnings: [] };
  const outcome = await localTextEngine.run('chat', { ...body, model, stream: false }, served);
  return (outcome as Extract<Outcome, { kind: 'json' }>).body;
}

// ---- the upstream engine -----------------------------------------------------------------------------------------

/** Forwards the request whole (with the route's model name) and relays the answer, its chunks as they come. */
const upstreamRuntime = (route: UpstreamRoute): EngineRuntime => ({
  engineType: 'upstream',
  engineVersion: route.url,
  functionCallingSupported: true,
  structuredOutputSupported: true,
});

/** The runtime a route's text engine reports, without making the engine. */
export const textRuntime = (route: Route): EngineRuntime => (route.engine === 'upstream' ? upstreamRuntime(route) : LOCAL_RUNTIME);

export function upstreamTextEngine(route: UpstreamRoute): TextEngine {
  return {
    runtime: upstreamRuntime(route),
    async run(op, body, served) {
      const res = await upstreamFetch(route, op === 'chat' ? '/chat/completions' : '/completions', { ...body, model: route.model ?? served.model });
      if (!body.stream) {
        const answer = (await res.json().catch(() => null)) as Body | null;
        if (!answer || typeof answer !== 'object' || !Array.isArray(answer.choices)) {
          throw apiError(502, 'upstream_failed', `The upstream engine at ${route.url} answered something that is not a completion.`);
        }
        return { kind: 'json', body: { ...answer, model: served.requested } };
      }
      return {
        kind: 'stream',
        chunks: (async function* () {
          for await (const event of upstreamEvents(res))
            yield event && typeof event === 'object' && 'choices' in event ? { ...(event as Body), model: served.requested } : (event as Body);
        })(),
      };
    },
  };
}
