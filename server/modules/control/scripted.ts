// What a scripted answer (scripts.ts) becomes: the operation's own answer, built where each capability calls its
// engine (one interception point each: inference's infer, the embeddings handler, audio's run, an evaluation's
// judge). Token counts are the local engine's, so usage and rate limits settle as for an engine's answer.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Outcome, Served, TextEngine, TextOperation } from '../../engines/chat.ts';
import { promptTokens } from '../../engines/chat.ts';
import type { EmbeddingRequest, EmbeddingResult, EmbeddingsEngine } from '../../engines/embeddings.ts';
import type { JudgeEngine } from '../../engines/judge.ts';
import { countTokens, decode, encode } from '../../engines/tokens.ts';
import type { Transcript } from '../../engines/transcription.ts';
import type { ControlPlane } from './plane.ts';
import { contentText, type ScriptAnswer, type Scripted, type ScriptRequest } from './scripts.ts';

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

/**
 * The embeddings of a request: the vectors a rule gives for its texts (as given), the engine's for the others.
 * `scripted` names the rule, null when none applied.
 */
export async function embedScripted(
  control: ControlPlane,
  now: number,
  req: EmbeddingRequest,
  engine: EmbeddingsEngine,
): Promise<{ result: EmbeddingResult; scripted: string | null }> {
  const s = control.scripts.take('embeddings', { operationId: 'createEmbedding', model: req.model, texts: req.input }, now, (a) =>
    a.embeddings!.some((e) => req.input.includes(e.text)),
  );
  if (!s) return { result: await engine.embed(req), scripted: null };
  const given = new Map(s.answer.embeddings!.map((e) => [e.text, Float32Array.from(e.vector)]));
  const rest = req.input.filter((t) => !given.has(t));
  const computed = rest.length ? await engine.embed({ ...req, input: rest }) : null;
  let k = 0;
  const vectors = req.input.map((t) => given.get(t) ?? computed!.vectors[k++]!);
  const promptTokens = req.input.filter((t) => given.has(t)).reduce((sum, t) => sum + countTokens(t), computed?.promptTokens ?? 0);
  return { result: { vectors, promptTokens, engine: computed?.engine ?? 'local' }, scripted: s.rule };
}

/** A scripted transcript: the text as one segment (the audio is not read). */
export function scriptedTranscript(s: Scripted, language: string | undefined): Transcript {
  const text = s.answer.content!;
  return { language: language ?? 'en', duration: 0, text, segments: [{ start: 0, end: 0, text }], words: [], engine: 'scripted', scripted: s.rule };
}

/** The judge of an evaluation, answering as scripted where a rule matches its call (model, and the text it judges). */
export function scriptedJudge(control: ControlPlane, now: () => number, engine: JudgeEngine): JudgeEngine {
  return {
    ...engine,
    async judge(task, call) {
      const s = control.scripts.take('judge', { model: call.model, texts: [call.user] }, now());
      if (!s) return engine.judge(task, call);
      return s.answer.content ?? JSON.stringify(s.answer.verdict);
    },
  };
}
