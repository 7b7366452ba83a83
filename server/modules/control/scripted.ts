// What a scripted answer (scripts.ts) becomes: the operation's own answer, given through the answer interceptor each
// capability asks before its engine (engines/intercept.ts: inference's text path, the embeddings handler, audio's
// transcription, an evaluation's judge). Token counts are the local engine's, so usage and rate limits settle as for
// an engine's answer.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Outcome, Served, TextEngine, TextOperation } from '../../engines/chat.ts';
import { promptTokens } from '../../engines/chat.ts';
import type { AnswerInterceptors } from '../../engines/intercept.ts';
import { countTokens, decode, encode } from '../../engines/tokens.ts';
import { contentText, type ScriptAnswer, type Scripted, type ScriptRequest, type Scripts } from './scripts.ts';

// biome-ignore lint/suspicious/noExplicitAny: a request body, already validated against the contract.
type Body = Record<string, any>;

const FINGERPRINT = 'scripted';

/** A chat or completion request as a rule sees it. */
export function textRequest(op: TextOperation, operationId: string, body: Body): ScriptRequest {
  const messages = (body.messages ?? []) as Body[];
  const lastUser = op === 'chat' ? contentText([...messages].reverse().find((m) => m.role === 'user')?.content) : String(body.prompt ?? '');
  const tools = ((body.tools ?? []) as Body[]).map((t) => t?.function?.name).filter((n): n is string => typeof n === 'string');
  return { operationId, model: body.model, texts: [lastUser], tools, body };
}

/** The platform's form of a tool call id: `call_` and 24 hexadecimal digits. */
const callId = () => `call_${randomBytes(12).toString('hex')}`;

/** The engine that answers `scripted` for one request, in the operation's wire shapes (whole or streamed). */
export function scriptedTextEngine(scripted: Scripted): TextEngine {
  const a = scripted.answer;
  return {
    runtime: { engineType: 'scripted', engineVersion: FINGERPRINT, functionCallingSupported: true, structuredOutputSupported: true },
    async run(op, body, served) {
      const pieces = a.chunks ?? null;
      const text = a.content ?? pieces?.join('') ?? (a.json === undefined ? null : JSON.stringify(a.json));
      const calls =
        op === 'chat' && a.tool_calls
          ? a.tool_calls.map((c, index) => ({
              index,
              id: callId(),
              type: 'function' as const,
              function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}) },
            }))
          : undefined;
      const n: number = body.n ?? 1;
      const each = countTokens(text ?? '') + (calls ?? []).reduce((sum, c) => sum + countTokens(c.function.name) + countTokens(c.function.arguments), 0);
      const prompt = a.usage?.prompt_tokens ?? promptTokens(op, body);
      const completion = a.usage?.completion_tokens ?? each * n;
      const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
      const finish = a.finish_reason ?? (calls ? 'tool_calls' : 'stop');
      const outcome: Outcome = body.stream
        ? { kind: 'stream', chunks: stream(op, body, served, a, { text, pieces, calls, finish, usage, n }) }
        : { kind: 'json', body: whole(op, served, { text, calls, finish, usage, n }) };
      return outcome;
    },
  };
}

interface Parts {
  text: string | null;
  calls?: { index: number; id: string; type: 'function'; function: { name: string; arguments: string } }[];
  finish: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  n: number;
}

function whole(op: TextOperation, served: Served, p: Parts): Body {
  const common = { id: served.id, created: served.created, model: served.requested, prompt: [], usage: p.usage, system_fingerprint: FINGERPRINT };
  const choices = Array.from({ length: p.n }, (_, index) =>
    op === 'chat'
      ? {
          index,
          message: { role: 'assistant', content: p.text, ...(p.calls ? { tool_calls: p.calls } : {}) },
          finish_reason: p.finish,
          logprobs: null,
        }
      : { index, text: p.text ?? '', finish_reason: p.finish },
  );
  return { ...common, object: op === 'chat' ? 'chat.completion' : 'text.completion', choices };
}

/** The stream's text pieces: as scripted, `chunk_size` characters each, or one token each (as the engine streams). */
function piecesOf(text: string, a: ScriptAnswer, scripted: string[] | null): string[] {
  if (scripted) return scripted;
  if (a.chunk_size) return Array.from({ length: Math.ceil(text.length / a.chunk_size) }, (_, i) => text.slice(i * a.chunk_size!, (i + 1) * a.chunk_size!));
  return encode(text).map((id) => decode([id]));
}

async function* stream(op: TextOperation, body: Body, served: Served, a: ScriptAnswer, p: Parts & { pieces: string[] | null }): AsyncGenerator<Body> {
  const includeUsage = body.stream_options?.include_usage === true;
  const base = { id: served.id, created: served.created, model: served.requested };
  const pieces = piecesOf(p.text ?? '', a, p.pieces);
  // The pacing: `delay_ms` before every chunk but the first.
  let first = true;
  const paced = async () => {
    if (!first && a.delay_ms) await sleep(a.delay_ms);
    first = false;
  };
  if (op === 'chat') {
    const chunk = (choices: Body[], usage: Body | null = null) => ({
      ...base,
      object: 'chat.completion.chunk',
      system_fingerprint: FINGERPRINT,
      choices,
      usage,
    });
    for (let index = 0; index < p.n; index++) {
      await paced();
      yield chunk([{ index, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }]);
      if (p.calls) {
        await paced();
        yield chunk([{ index, delta: { role: 'assistant', content: null, tool_calls: p.calls }, finish_reason: null, logprobs: null }]);
      }
      for (const piece of pieces) {
        await paced();
        yield chunk([{ index, delta: { role: 'assistant', content: piece }, finish_reason: null, logprobs: null }]);
      }
      await paced();
      yield chunk([{ index, delta: { role: 'assistant' }, finish_reason: p.finish, logprobs: null }]);
    }
    if (includeUsage) yield chunk([], p.usage);
    return;
  }
  const chunk = (index: number, piece: string | null, finish: string | null, usage: Body | null = null) => ({
    ...base,
    object: 'completion.chunk',
    token: piece === null ? { id: -1, text: '', logprob: 0, special: true } : { id: encode(piece)[0] ?? -1, text: piece, logprob: 0, special: false },
    choices: index < 0 ? [] : [{ index, text: piece ?? '', finish_reason: finish }],
    usage,
    finish_reason: finish,
  });
  for (let index = 0; index < p.n; index++) {
    for (const piece of pieces) {
      await paced();
      yield chunk(index, piece, null);
    }
    await paced();
    yield chunk(index, null, p.finish);
  }
  if (includeUsage) yield chunk(-1, null, null, p.usage);
}

const scriptedHeaders = (rule: string) => ({ 'x-scripted': rule });

/**
 * The answer interceptors of the scripted answers (engines/intercept.ts): each capability's request, matched against
 * the rules, answered as the matching rule says. With no rule held, none of them is asked for anything.
 */
export function scriptedAnswers(scripts: Scripts): AnswerInterceptors {
  return {
    async text({ op, operationId, body }) {
      if (!scripts.any) return null;
      const s = await scripts.take('chat', textRequest(op, operationId, body));
      return s && { value: scriptedTextEngine(s), headers: scriptedHeaders(s.rule) };
    },
    async embeddings(req) {
      if (!scripts.any) return null;
      const s = await scripts.take('embeddings', { operationId: 'createEmbedding', model: req.model, texts: req.input }, (a) =>
        a.embeddings!.some((e) => req.input.includes(e.text)),
      );
      return s && { value: new Map(s.answer.embeddings!.map((e) => [e.text, Float32Array.from(e.vector)])), headers: scriptedHeaders(s.rule) };
    },
    async transcription({ operationId, model, body }) {
      if (!scripts.any) return null;
      const s = await scripts.take('transcription', { operationId, model, texts: [body.prompt ?? ''], body });
      if (!s) return null;
      const text = s.answer.content!;
      const transcript = { language: body.language ?? 'en', duration: 0, text, segments: [{ start: 0, end: 0, text }], words: [], engine: 'scripted' };
      return { value: transcript, headers: scriptedHeaders(s.rule) };
    },
    async judge(call) {
      if (!scripts.any) return null;
      const s = await scripts.take('judge', { model: call.model, texts: [call.user] });
      return s && { value: s.answer.content ?? JSON.stringify(s.answer.verdict), headers: scriptedHeaders(s.rule) };
    },
  };
}
