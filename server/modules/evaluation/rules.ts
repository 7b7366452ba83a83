// The rules of an evaluation: what each type requires, the templates, what the judge is asked and how its answer is
// read, how the two passes of a comparison are reconciled, and the results' figures. Everything a request can get
// wrong is checked before anything is stored (400 naming the field); everything here but `accept` is pure.
import nunjucks from 'nunjucks';
import type { components } from '../../../generated/api.d.ts';
import type { UrlFetchPolicy } from '../../core/config.ts';
import { badRequest } from '../../core/errors.ts';
import type { JudgeTask } from '../../engines/judge.ts';
import { refusedLiteral } from '../../engines/user-urls.ts';
import type { RequestBody } from '../types.ts';

export type EvaluationType = RequestBody<'createEvaluationJob'>['type'];
export type Parameters = RequestBody<'createEvaluationJob'>['parameters'];
export type Judge = components['schemas']['EvaluationJudgeModelConfig'];
export type ModelRequest = components['schemas']['EvaluationModelRequest'];
export type ModelSource = Judge['model_source'];
export type Row = Record<string, unknown>;

export const STATUSES = ['pending', 'queued', 'running', 'completed', 'error', 'user_error'] as const;
export const MODEL_SOURCES = ['all', 'serverless', 'dedicated', 'external'] as const;
/** The most rows an input file may have. */
export const MAX_ROWS = 10_000;
export const DEFAULT_MAX_TOKENS = 32_768;
export const DEFAULT_TEMPERATURE = 0.05;
/** Calls at a time when `num_workers` is absent, by source (a dedicated endpoint gets at least its default). */
export const DEFAULT_WORKERS: Record<ModelSource, number> = { serverless: 25, dedicated: 5, external: 2 };

/** The columns the local judge reads as a row's reference answer, and (for compare, without one) as its prompt. */
export const REFERENCE_COLUMNS = ['reference', 'ground_truth', 'expected', 'answer'];
export const PROMPT_COLUMNS = ['prompt', 'question', 'input'];

export const workersOf = (m: Pick<Judge, 'model_source' | 'num_workers'>): number =>
  m.model_source === 'dedicated' ? Math.max(DEFAULT_WORKERS.dedicated, m.num_workers ?? 0) : (m.num_workers ?? DEFAULT_WORKERS[m.model_source]);

// Jinja2 templates over a row's columns: no HTML escaping (these are prompts), and a column a row lacks is an error
// rather than an empty string, so a misspelt column does not silently judge empty text.
const templates = new nunjucks.Environment(null, { autoescape: false, throwOnUndefined: true });

/** nunjucks' message without its noise (it names no file: templates here are strings). */
const templateError = (err: unknown) =>
  (err as Error).message
    .replace(/\(unknown path\)|Template render error:/g, '')
    .replace(/\s+/g, ' ')
    .trim();

/** A template's text with the row's columns filled in; throws saying what is wrong. */
export function render(template: string, row: Row): string {
  try {
    return templates.renderString(template, row);
  } catch (err) {
    const message = templateError(err);
    throw new Error(/null or undefined/.test(message) ? `${message} (a column the row lacks, or that is null)` : message);
  }
}

function checkTemplate(template: string, param: string): void {
  try {
    new nunjucks.Template(template, templates, undefined, true);
  } catch (err) {
    throw badRequest(`'${param}' is not a valid Jinja2 template: ${templateError(err)}`, param, 'invalid_template');
  }
}

/** Whether a serverless or dedicated model exists for the caller, as a judge or as a model under evaluation. */
export type Known = (source: 'serverless' | 'dedicated', model: string, role: 'judge' | 'model') => Promise<boolean>;

/**
 * An external server's base URL: http(s); no credentials (the token is `external_api_token`); no query or fragment,
 * which would choose the path called instead of `/chat/completions`; and not an address this server does not call
 * (a host name is resolved, and refused the same way, when the job runs: engines/user-urls.ts).
 */
function checkBaseUrl(value: string, param: string, policy: UrlFetchPolicy): void {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw badRequest(`'external_base_url' must be an http(s) URL (got '${value}').`, param);
  if (value.includes('?') || value.includes('#'))
    throw badRequest("'external_base_url' must not have a query or a fragment: it is the base '/chat/completions' is added to.", param);
  if (url.username || url.password) throw badRequest("'external_base_url' must not hold credentials: send the token in 'external_api_token'.", param);
  if (refusedLiteral(url, policy))
    throw badRequest(
      `'external_base_url' is not a public internet address, and this server calls only those (got '${url.hostname}').`,
      param,
      'url_not_allowed',
    );
}

/** Checks a model given by source (the judge, or a model under evaluation). */
async function checkModel(m: Judge | ModelRequest, param: string, known: Known, policy: UrlFetchPolicy): Promise<void> {
  checkTemplate(m.system_template, `${param}.system_template`);
  if ('input_template' in m) checkTemplate(m.input_template, `${param}.input_template`);
  if (m.model_source === 'external') {
    if (m.external_base_url === undefined)
      throw badRequest(`An external model needs 'external_base_url', the base URL of its OpenAI-compatible server.`, `${param}.external_base_url`, 'required');
    checkBaseUrl(m.external_base_url, `${param}.external_base_url`, policy);
    if (m.external_api_token === undefined)
      throw badRequest(`An external model needs 'external_api_token', its server's bearer token.`, `${param}.external_api_token`, 'required');
    return;
  }
  const role = 'input_template' in m ? 'model' : 'judge';
  if (!(await known(m.model_source, m.model, role))) {
    const where =
      m.model_source === 'dedicated'
        ? "a dedicated endpoint of this project ('<project_slug>/<endpoint_name>')"
        : role === 'judge'
          ? 'a serverless judge model (GET /v1/evaluation/model-list)'
          : 'a serverless chat model of the catalogue';
    throw badRequest(`'${m.model}' is not ${where}.`, `${param}.model`, 'model_not_available');
  }
}

/** The checks of a create request that need no file; `known` looks models up; `policy` is how user-given URLs are fetched. */
export async function accept(type: EvaluationType, p: Parameters, known: Known, policy: UrlFetchPolicy): Promise<void> {
  if (type === 'classify') {
    if (p.labels === undefined) throw badRequest("A classify evaluation needs 'labels' (at least 2).", 'parameters.labels', 'required');
    if (new Set(p.labels).size !== p.labels.length) throw badRequest("'labels' must be distinct.", 'parameters.labels');
    if (p.labels.some((l) => l.trim() === '')) throw badRequest("'labels' must not be empty strings.", 'parameters.labels');
    if (p.pass_labels === undefined) throw badRequest("A classify evaluation needs 'pass_labels' (at least 1).", 'parameters.pass_labels', 'required');
    const stray = p.pass_labels.find((l) => !p.labels!.includes(l));
    if (stray !== undefined) throw badRequest(`Pass label '${stray}' is not one of the labels (${p.labels.join(', ')}).`, 'parameters.pass_labels');
  }
  if (type === 'score') {
    for (const f of ['min_score', 'max_score', 'pass_threshold'] as const) {
      if (p[f] === undefined) throw badRequest(`A score evaluation needs '${f}'.`, `parameters.${f}`, 'required');
    }
    if (!(p.min_score! < p.max_score!)) throw badRequest(`'min_score' (${p.min_score}) must be below 'max_score' (${p.max_score}).`, 'parameters.min_score');
    if (p.pass_threshold! < p.min_score! || p.pass_threshold! > p.max_score!) {
      throw badRequest(
        `'pass_threshold' (${p.pass_threshold}) must lie from min_score to max_score (${p.min_score} to ${p.max_score}).`,
        'parameters.pass_threshold',
      );
    }
  }
  await checkModel(p.judge, 'parameters.judge', known, policy);
  const evaluated = type === 'compare' ? (['model_a', 'model_b'] as const) : (['model_to_evaluate'] as const);
  for (const f of evaluated) {
    const m = p[f];
    if (m === undefined) {
      if (type === 'compare')
        throw badRequest(`A compare evaluation needs '${f}': a column of responses, or a model that generates them.`, `parameters.${f}`, 'required');
      continue;
    }
    if (typeof m === 'string') {
      if (m.trim() === '') throw badRequest(`'${f}' names a column: it must not be empty.`, `parameters.${f}`);
    } else await checkModel(m, `parameters.${f}`, known, policy);
  }
}

/** The parameters as shown to callers: every external token masked. */
export function masked(p: Parameters): Record<string, unknown> {
  const mask = <T extends object>(m: T): T => ('external_api_token' in m && m.external_api_token !== undefined ? { ...m, external_api_token: '***' } : m);
  const out: Record<string, unknown> = { ...p, judge: mask(p.judge) };
  for (const f of ['model_to_evaluate', 'model_a', 'model_b'] as const) {
    const m = p[f];
    if (m !== undefined && typeof m !== 'string') out[f] = mask(m);
  }
  return out;
}

/** The first of `columns` the row has, as text. */
export function columnText(row: Row, columns: string[]): string | undefined {
  const c = columns.find((k) => row[k] !== undefined && row[k] !== null);
  return c === undefined ? undefined : typeof row[c] === 'string' ? (row[c] as string) : JSON.stringify(row[c]);
}

/** What the judge is told to answer, after its own system prompt. */
export function instructions(task: JudgeTask): string {
  switch (task.kind) {
    case 'classify':
      return `Classify the response with exactly one of these labels: ${task.labels.map((l) => JSON.stringify(l)).join(', ')}. Answer with JSON: {"label": "<label>"}.`;
    case 'score':
      return `Score the response with a number from ${task.min} to ${task.max}. Answer with JSON: {"score": <number>}.`;
    case 'compare':
      return 'Compare response A with response B. Answer with JSON: {"winner": "A"}, {"winner": "B"} or {"winner": "tie"}.';
  }
}

/** The user message: the response to judge, or both responses in the order shown. */
export function userMessage(task: JudgeTask): string {
  return task.kind === 'compare' ? `Response A:\n${task.first}\n\nResponse B:\n${task.second}` : task.response;
}

/** A judge's reading of one answer: the verdict, or why there is none (`invalid`: an answer outside what was asked; `unreadable`: no answer of the asked form). */
export type Reading<V> = { ok: true; value: V } | { ok: false; why: 'invalid' | 'unreadable'; detail: string };

/** The first JSON object in the text that has `key` (the whole text, or one embedded in prose or a code fence). */
function jsonField(text: string, key: string): { found: boolean; value?: unknown; object?: Record<string, unknown> } {
  const candidates = [text.trim(), ...(text.match(/\{[^{}]*\}/g) ?? [])];
  for (const c of candidates) {
    try {
      const parsed = JSON.parse(c);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && key in parsed) return { found: true, value: parsed[key], object: parsed };
    } catch {
      // not JSON: the next candidate
    }
  }
  return { found: false };
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function readLabel(answer: string, labels: string[]): Reading<string> {
  const json = jsonField(answer, 'label');
  if (json.found) {
    if (typeof json.value === 'string' && labels.includes(json.value)) return { ok: true, value: json.value };
    const explanation = typeof json.object?.explanation === 'string' ? ` ${json.object.explanation}` : '';
    return {
      ok: false,
      why: 'invalid',
      detail: json.value === null ? `The judge gave no label.${explanation}` : `The judge's label ${JSON.stringify(json.value)} is not one of the labels.`,
    };
  }
  // A bare answer: the one label it names as a whole word.
  const named = labels.filter((l) => new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(l)}($|[^\\p{L}\\p{N}])`, 'iu').test(answer));
  if (named.length === 1) return { ok: true, value: named[0]! };
  return {
    ok: false,
    why: 'invalid',
    detail: named.length ? `The answer names several labels (${named.join(', ')}).` : 'The answer names none of the labels.',
  };
}

export function readScore(answer: string, min: number, max: number): Reading<number> {
  const json = jsonField(answer, 'score');
  const value = json.found ? json.value : /^\s*-?\d+(\.\d+)?\s*$/.test(answer) ? Number(answer) : undefined;
  const n = typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n))
    return {
      ok: false,
      why: 'invalid',
      detail: json.found ? `The judge's score ${JSON.stringify(json.value)} is not a number.` : 'The answer holds no score.',
    };
  if (n < min || n > max) return { ok: false, why: 'invalid', detail: `The judge's score ${n} lies outside ${min}..${max}.` };
  return { ok: true, value: n };
}

export type Winner = 'A' | 'B' | 'tie';

/** The winner as shown (A: the response shown first). */
export function readWinner(answer: string): Reading<Winner> {
  const json = jsonField(answer, 'winner');
  const raw = json.found ? json.value : answer.trim().replace(/^["'`*]+|["'`.*!]+$/g, '');
  const w = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (w === 'a') return { ok: true, value: 'A' };
  if (w === 'b') return { ok: true, value: 'B' };
  if (w === 'tie') return { ok: true, value: 'tie' };
  return { ok: false, why: 'unreadable', detail: `The answer names no winner (A, B or tie).` };
}

/** A flipped-order verdict (B shown first) in original terms. */
export const unflip = (w: Winner): Winner => (w === 'A' ? 'B' : w === 'B' ? 'A' : 'tie');

/** Two passes' verdicts, both in original terms: agreement stands; any disagreement (one tie included) is a tie. */
export const reconcile = (original: Winner, flipped: Winner): Winner => (original === flipped ? original : 'tie');

const pct = (part: number, whole: number) => (whole === 0 ? 0 : (100 * part) / whole);

/** The population mean and standard deviation (0 and 0 for no values). */
export function meanStd(values: number[]): { mean: number; std: number } {
  if (values.length === 0) return { mean: 0, std: 0 };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length;
  return { mean, std: Math.sqrt(variance) };
}

/** What became of one row, as the results count it. */
export type Outcome<V> = { generationFailed: true } | { judgeFailed: true } | { invalid: true } | { value: V };

type Counts = { generation_fail_count: number; judge_fail_count: number };
function failures(outcomes: Outcome<unknown>[]): Counts {
  return {
    generation_fail_count: outcomes.filter((o) => 'generationFailed' in o).length,
    judge_fail_count: outcomes.filter((o) => 'judgeFailed' in o).length,
  };
}

export function classifyResults(
  outcomes: Outcome<string>[],
  labels: string[],
  passLabels: string[],
  resultFileId: string,
): components['schemas']['EvaluationClassifyResults'] {
  const counts = Object.fromEntries(labels.map((l) => [l, 0]));
  const valid = outcomes.flatMap((o) => ('value' in o ? [o.value] : []));
  for (const v of valid) counts[v]!++;
  return {
    ...failures(outcomes),
    invalid_label_count: outcomes.filter((o) => 'invalid' in o).length,
    result_file_id: resultFileId,
    pass_percentage: valid.length === 0 ? null : pct(valid.filter((v) => passLabels.includes(v)).length, valid.length),
    label_counts: JSON.stringify(counts),
  };
}

export function scoreResults(outcomes: Outcome<number>[], passThreshold: number, resultFileId: string): components['schemas']['EvaluationScoreResults'] {
  const valid = outcomes.flatMap((o) => ('value' in o ? [o.value] : []));
  const { mean, std } = meanStd(valid);
  return {
    aggregated_scores: { mean_score: mean, std_score: std, pass_percentage: pct(valid.filter((v) => v >= passThreshold).length, valid.length) },
    ...failures(outcomes),
    invalid_score_count: outcomes.filter((o) => 'invalid' in o).length,
    failed_samples: outcomes.length - valid.length,
    result_file_id: resultFileId,
  };
}

/** `judgeFailures`: failed judge calls across both passes (a row can count twice). */
export function compareResults(outcomes: Outcome<Winner>[], judgeFailures: number, resultFileId: string): components['schemas']['EvaluationCompareResults'] {
  const valid = outcomes.flatMap((o) => ('value' in o ? [o.value] : []));
  return {
    A_wins: valid.filter((v) => v === 'A').length,
    B_wins: valid.filter((v) => v === 'B').length,
    Ties: valid.filter((v) => v === 'tie').length,
    generation_fail_count: outcomes.filter((o) => 'generationFailed' in o).length,
    judge_fail_count: judgeFailures,
    result_file_id: resultFileId,
  };
}
