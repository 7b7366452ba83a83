// Scripted answers (the Control tag, like WireMock's stubs): rules that match a request to an engine (chat and
// completions, embeddings, transcription, an evaluation's judge) and decide its answer instead of the engine. Shared
// by every process like the fault rules (rules.ts): a sequence of answers is consumed once in total, whichever process
// answers; with no rule held the engines' interceptors cost one check. What an answer becomes on the wire is built in
// scripted.ts, the answer interceptors registered with the engines (engines/intercept.ts).
import { isDeepStrictEqual } from 'node:util';
import { RE2JS } from 're2js';
import { badRequest } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Database } from '../../db/index.ts';
import { type Rule, RuleStore } from './rules.ts';

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

/** A rule, its defaults filled in. */
export type ScriptRule = Rule<ScriptInput & { capability: Capability; after_last: 'repeat' | 'fall_through' }>;

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

/** The operations a capability's rule may name, checked as a rule is made (400 naming the field). */
function checkInput(input: ScriptInput, capability: Capability, dimensions: number | undefined): void {
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
  if (m.message_regex !== undefined) compile(m.message_regex);
  m.body?.forEach((c, i) => {
    if (segments(c.path).some((s) => s === ''))
      throw badRequest(`'${c.path}' is not a dotted path (keys and array indices joined by '.').`, `match.body.${i}.path`, 'invalid_value');
    if (c.equals === undefined && c.contains === undefined)
      throw badRequest('A body condition needs equals or contains.', `match.body.${i}.equals`, 'invalid_value');
  });
  for (const [i, a] of input.answers.entries()) checkAnswer(capability, a, `answers.${i}`, dimensions);
}

function compile(pattern: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (e) {
    throw badRequest(`match.message_regex is not a pattern RE2 reads: ${(e as Error).message}`, 'match.message_regex', 'invalid_pattern');
  }
}

function checkAnswer(capability: Capability, a: ScriptAnswer, param: string, dimensions: number | undefined) {
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

/**
 * A new rule checked against what the spec's schema cannot say (400 naming the field), made at `now`.
 * `dimensionsOf` gives an embedding model's vector length (undefined: not an embedding model of the catalogue).
 */
export function newScript(input: ScriptInput, now: number, dimensionsOf: (model: string) => number | undefined): ScriptRule {
  const capability = input.capability ?? 'chat';
  let dimensions: number | undefined;
  if (capability === 'embeddings') {
    const model = input.match?.model;
    if (model === undefined) throw badRequest('An embeddings rule names its model: its vectors must have its dimensions.', 'match.model', 'missing_field');
    dimensions = dimensionsOf(model);
    if (dimensions === undefined) throw badRequest(`'${model}' is not an embedding model of the catalogue.`, 'match.model', 'model_not_supported');
  }
  checkInput(input, capability, dimensions);
  return {
    id: newId('script', now),
    input: { ...input, capability, after_last: input.after_last ?? 'repeat' },
    hits: 0,
    skipped: 0,
    createdAt: now,
    expiresAt: input.ttl_seconds === undefined ? null : now + input.ttl_seconds * 1000,
  };
}

export class Scripts {
  readonly store: RuleStore<ScriptRule['input']>;
  /** Each held rule's compiled pattern (RE2: linear in the text), made when first needed. */
  private readonly patterns = new Map<string, RE2JS>();

  constructor(
    db: Database,
    private readonly now: () => number,
  ) {
    this.store = new RuleStore<ScriptRule['input']>(db, 'script', 'script rule', 'scriptId');
  }

  /** Whether any rule is held (the engines' interceptors ask nothing more when none is). */
  get any(): boolean {
    return this.store.held.length > 0;
  }

  private matches(rule: ScriptRule, capability: Capability, req: ScriptRequest): boolean {
    const input = rule.input;
    if (input.capability !== capability) return false;
    const m = input.match;
    if (!m) return true;
    if (m.model !== undefined && m.model !== req.model) return false;
    if (m.operations && !(req.operationId && m.operations.includes(req.operationId))) return false;
    if (m.message_contains !== undefined && !req.texts.some((t) => t.includes(m.message_contains!))) return false;
    if (m.message_regex !== undefined) {
      const pattern = this.patterns.get(rule.id) ?? RE2JS.compile(m.message_regex);
      this.patterns.set(rule.id, pattern);
      if (!req.texts.some((t) => pattern.matcher(t).find())) return false;
    }
    if (m.tool !== undefined && !req.tools?.includes(m.tool)) return false;
    if (m.body && !m.body.every((c) => holds(req.body, c))) return false;
    return true;
  }

  /**
   * The answer for a request: the next answer of the first rule in force that matches it (oldest first), which is
   * then consumed, once in total whichever process takes it; null: the engine answers. `fits` may refuse an answer
   * (embeddings: none of its texts asked for).
   */
  async take(capability: Capability, req: ScriptRequest, fits: (a: ScriptAnswer) => boolean = () => true): Promise<Scripted | null> {
    for (const rule of this.store.inForce(this.now())) {
      if (!this.matches(rule, capability, req)) continue;
      const answers = rule.input.answers;
      for (;;) {
        const hits = await this.store.hitsOf(rule.id);
        if (hits === null || (hits >= answers.length && rule.input.after_last === 'fall_through')) break;
        const answer = answers[Math.min(hits, answers.length - 1)]!;
        if (!fits(answer)) break;
        if (await this.store.take(rule.id, hits)) return { rule: rule.id, answer };
      }
    }
    return null;
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
