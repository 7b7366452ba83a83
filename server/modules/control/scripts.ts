// Scripted answers (the Control tag, like WireMock's stubs): rules that match a request to an engine (chat and
// completions, embeddings, transcription, an evaluation's judge) and decide its answer instead of the engine. Kept
// in memory per process, like the fault rules; the empty list costs one length check per request. What an answer
// becomes on the wire is built in scripted.ts, at one interception point per capability.
import { isDeepStrictEqual } from 'node:util';
import { RE2JS } from 're2js';
import { badRequest, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';

export type Capability = 'chat' | 'embeddings' | 'transcription' | 'judge';

/** The operations each capability answers (the judge answers no operation: it runs inside an evaluation). */
export const CAPABILITY_OPERATIONS: Record<Capability, string[]> = {
  chat: ['createChatCompletion', 'createCompletion'],
  embeddings: ['createEmbedding'],
  transcription: ['createTranscription', 'createTranslation'],
  judge: [],
};

/** What each capability's answer may hold. */
const ANSWER_FIELDS: Record<Capability, string[]> = {
  chat: ['content', 'chunks', 'json', 'tool_calls', 'finish_reason', 'usage', 'chunk_size', 'delay_ms'],
  embeddings: ['embeddings'],
  transcription: ['content'],
  judge: ['content', 'verdict'],
};

export interface BodyCondition {
  path: string;
  equals?: unknown;
  contains?: string;
}

export interface ScriptMatch {
  model?: string;
  operations?: string[];
  message_contains?: string;
  message_regex?: string;
  tool?: string;
  body?: BodyCondition[];
}

export interface ScriptedToolCall {
  name: string;
  arguments?: Record<string, unknown> | string;
}

export interface ScriptAnswer {
  content?: string;
  chunks?: string[];
  json?: Record<string, unknown>;
  tool_calls?: ScriptedToolCall[];
  finish_reason?: 'stop' | 'eos' | 'length' | 'tool_calls' | 'function_call';
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  chunk_size?: number;
  delay_ms?: number;
  verdict?: { label?: string | null; score?: number; winner?: 'A' | 'B' | 'tie'; explanation?: string };
  embeddings?: { text: string; vector: number[] }[];
}

export interface ScriptInput {
  capability?: Capability;
  match?: ScriptMatch;
  answers: ScriptAnswer[];
  after_last?: 'repeat' | 'fall_through';
  ttl_seconds?: number;
}

export interface ScriptRule extends ScriptInput {
  id: string;
  capability: Capability;
  after_last: 'repeat' | 'fall_through';
  hits: number;
  createdAt: number;
  expiresAt: number | null;
}

/** A request to an engine, as a rule sees it. */
export interface ScriptRequest {
  operationId?: string;
  /** The `model` as the request named it (embeddings: the catalogue's id). */
  model: string;
  /** The texts the rule's message conditions read (chat: the last user message; embeddings: each input; ...). */
  texts: string[];
  /** The names of the tools the request offers. */
  tools?: string[];
  body?: unknown;
}

export interface Scripted {
  rule: string;
  answer: ScriptAnswer;
}

/** A dotted path's segments (`messages.0.content`; a negative index counts from the end: `messages.-1.role`). */
const segments = (path: string) => path.split('.');

function valueAt(body: unknown, path: string): unknown {
  let v: unknown = body;
  for (const s of segments(path)) {
    if (Array.isArray(v)) {
      const i = Number(s);
      if (!Number.isInteger(i)) return undefined;
      v = v.at(i);
    } else if (v !== null && typeof v === 'object' && Object.hasOwn(v, s)) v = (v as Record<string, unknown>)[s];
    else return undefined;
  }
  return v;
}

function holds(body: unknown, c: BodyCondition): boolean {
  const v = valueAt(body, c.path);
  if (v === undefined) return false;
  if (c.equals !== undefined && !isDeepStrictEqual(v, c.equals)) return false;
  if (c.contains !== undefined && !(typeof v === 'string' ? v : JSON.stringify(v)).includes(c.contains)) return false;
  return true;
}

/** The rules in force and what they match, each with its compiled pattern (RE2: linear in the text). */
interface Held {
  rule: ScriptRule;
  pattern?: RE2JS;
}

export class Scripts {
  private held: Held[] = [];

  /**
   * Adds a rule checked against what the spec's schema cannot say (400 naming the field). `dimensionsOf` gives an
   * embedding model's vector length (undefined: not an embedding model of the catalogue).
   */
  add(input: ScriptInput, now: number, dimensionsOf: (model: string) => number | undefined): ScriptRule {
    const capability = input.capability ?? 'chat';
    const m = input.match ?? {};
    m.operations?.forEach((op, i) => {
      if (!CAPABILITY_OPERATIONS[capability].includes(op))
        throw badRequest(
          `'${op}' is not an operation a ${capability} rule answers (${CAPABILITY_OPERATIONS[capability].join(', ') || 'none: the judge runs inside evaluations'}).`,
          `match.operations.${i}`,
          'unknown_operation',
        );
    });
    if (m.tool !== undefined && capability !== 'chat')
      throw badRequest('Only chat requests offer tools: match.tool is for chat rules.', 'match.tool', 'invalid_value');
    let pattern: RE2JS | undefined;
    if (m.message_regex !== undefined) {
      try {
        pattern = RE2JS.compile(m.message_regex);
      } catch (e) {
        throw badRequest(`match.message_regex is not a pattern RE2 reads: ${(e as Error).message}`, 'match.message_regex', 'invalid_pattern');
      }
    }
    m.body?.forEach((c, i) => {
      if (segments(c.path).some((s) => s === ''))
        throw badRequest(`'${c.path}' is not a dotted path (keys and array indices joined by '.').`, `match.body.${i}.path`, 'invalid_value');
      if (c.equals === undefined && c.contains === undefined)
        throw badRequest('A body condition needs equals or contains.', `match.body.${i}.equals`, 'invalid_value');
    });
    let dimensions: number | undefined;
    if (capability === 'embeddings') {
      if (m.model === undefined) throw badRequest('An embeddings rule names its model: its vectors must have its dimensions.', 'match.model', 'missing_field');
      dimensions = dimensionsOf(m.model);
      if (dimensions === undefined) throw badRequest(`'${m.model}' is not an embedding model of the catalogue.`, 'match.model', 'model_not_supported');
    }
    for (const [i, a] of input.answers.entries()) this.check(capability, a, `answers.${i}`, dimensions);
    const rule: ScriptRule = {
      ...input,
      capability,
      after_last: input.after_last ?? 'repeat',
      id: newId('script', now),
      hits: 0,
      createdAt: now,
      expiresAt: input.ttl_seconds === undefined ? null : now + input.ttl_seconds * 1000,
    };
    this.held.push({ rule, pattern });
    return rule;
  }

  private check(capability: Capability, a: ScriptAnswer, param: string, dimensions: number | undefined) {
    for (const key of Object.keys(a))
      if (!ANSWER_FIELDS[capability].includes(key))
        throw badRequest(`'${key}' is not part of a ${capability} answer (${ANSWER_FIELDS[capability].join(', ')}).`, `${param}.${key}`, 'invalid_value');
    const given = (keys: (keyof ScriptAnswer)[]) => keys.filter((k) => a[k] !== undefined);
    if (capability === 'chat') {
      if (!given(['content', 'chunks', 'json', 'tool_calls']).length)
        throw badRequest('A chat answer needs content, chunks, json or tool_calls.', `${param}.content`, 'missing_field');
      const texts = given(['content', 'chunks', 'json']);
      if (texts.length > 1) throw badRequest(`Give one of content, chunks and json (got ${texts.join(' and ')}).`, `${param}.${texts[1]}`, 'invalid_value');
    }
    if (capability === 'transcription' && a.content === undefined)
      throw badRequest('A transcription answer needs content (the transcript).', `${param}.content`, 'missing_field');
    if (capability === 'judge' && given(['content', 'verdict']).length !== 1)
      throw badRequest('A judge answer is a verdict or the judge\u2019s text (content): give one.', `${param}.verdict`, 'invalid_value');
    if (capability === 'embeddings') {
      if (!a.embeddings?.length) throw badRequest('An embeddings answer needs embeddings: [{text, vector}].', `${param}.embeddings`, 'missing_field');
      a.embeddings.forEach((e, k) => {
        if (e.vector.length !== dimensions)
          throw badRequest(
            `The vector has ${e.vector.length} dimensions; the model's vectors have ${dimensions}.`,
            `${param}.embeddings.${k}.vector`,
            'invalid_dimensions',
          );
      });
    }
  }

  list(now: number): ScriptRule[] {
    this.expire(now);
    return this.held.map((h) => h.rule);
  }

  get(id: string, now: number): ScriptRule {
    this.expire(now);
    const held = this.held.find((h) => h.rule.id === id);
    if (!held) throw notFound('script rule', id, 'scriptId');
    return held.rule;
  }

  remove(id: string): void {
    const i = this.held.findIndex((h) => h.rule.id === id);
    if (i < 0) throw notFound('script rule', id, 'scriptId');
    this.held.splice(i, 1);
  }

  clear(): number {
    const n = this.held.length;
    this.held = [];
    return n;
  }

  /**
   * The answer for a request: the next answer of the first rule in force that matches it (oldest first), which is
   * then consumed; null: the engine answers. `fits` may refuse an answer (embeddings: none of its texts asked for).
   */
  take(capability: Capability, req: ScriptRequest, now: number, fits: (a: ScriptAnswer) => boolean = () => true): Scripted | null {
    if (!this.held.length) return null;
    this.expire(now);
    for (const { rule, pattern } of this.held) {
      if (rule.capability !== capability) continue;
      const spent = rule.hits >= rule.answers.length;
      if (spent && rule.after_last === 'fall_through') continue;
      const m = rule.match;
      if (m) {
        if (m.model !== undefined && m.model !== req.model) continue;
        if (m.operations && !(req.operationId && m.operations.includes(req.operationId))) continue;
        if (m.message_contains !== undefined && !req.texts.some((t) => t.includes(m.message_contains!))) continue;
        if (pattern && !req.texts.some((t) => pattern.matcher(t).find())) continue;
        if (m.tool !== undefined && !req.tools?.includes(m.tool)) continue;
        if (m.body && !m.body.every((c) => holds(req.body, c))) continue;
      }
      const answer = rule.answers[Math.min(rule.hits, rule.answers.length - 1)]!;
      if (!fits(answer)) continue;
      rule.hits++;
      return { rule: rule.id, answer };
    }
    return null;
  }

  private expire(now: number) {
    if (this.held.some((h) => h.rule.expiresAt !== null && h.rule.expiresAt <= now))
      this.held = this.held.filter((h) => h.rule.expiresAt === null || h.rule.expiresAt > now);
  }
}

/** The text of a chat message's content: a string, or its text parts joined by line breaks. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p?.type === 'text')
    .map((p) => p.text ?? '')
    .join('\n');
}
