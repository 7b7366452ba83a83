// One evaluation, start to end (the runner's long step): read the input rows, obtain the responses to judge (a
// column, or a model's generations), ask the judge about each row (twice for a position-corrected comparison),
// read its verdicts, and place the result file. Calls run `num_workers` at a time per model. What the input gets
// wrong ends the job `user_error`; a failed call only fails its row.
import { Semaphore } from 'async-mutex';
import type { EvaluationJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { interceptedJudge } from '../../engines/intercept.ts';
import { type ChatCall, type JudgeEngine, type JudgeTask, localJudgeEngine, openAiCompatibleEngine, RetriesExhausted } from '../../engines/judge.ts';
import { UserUrlError } from '../../engines/user-urls.ts';
import type { Services } from '../types.ts';
import { InputError, inputRows, type PlacedFile, placeResultFile } from './dataset.ts';
import {
  classifyResults,
  columnText,
  compareResults,
  DEFAULT_MAX_TOKENS,
  DEFAULT_TEMPERATURE,
  type EvaluationType,
  instructions,
  type Judge,
  MAX_ROWS,
  type ModelRequest,
  type Outcome,
  type Parameters,
  PROMPT_COLUMNS,
  REFERENCE_COLUMNS,
  type Row,
  readLabel,
  readScore,
  readWinner,
  reconcile,
  render,
  scoreResults,
  unflip,
  userMessage,
  type Winner,
  workersOf,
} from './rules.ts';

export type Evaluated =
  | { outcome: 'completed'; results: object; resultFile: PlacedFile; summary: string }
  | { outcome: 'user_error'; message: string }
  | { outcome: 'error'; message: string };

/** The input's fault: ends the job `user_error` with this message. */
class UserError extends Error {}

/** An external server this server does not call (its host is not public): the caller's to fix, for the whole job. */
const refusedUrl = (err: unknown): err is UserUrlError => err instanceof UserUrlError && err.kind === 'refused';

/** What ends the whole job rather than failing one row: the input's fault, a refused URL, or a server that kept refusing (429/503). */
const fatal = (err: unknown) => err instanceof UserError || err instanceof RetriesExhausted || refusedUrl(err);

/** The engine a model runs on: its external server, or wherever the engine routes send it for chat. */
export function engineFor(services: Pick<Services, 'engines' | 'config'>, m: Judge | ModelRequest): JudgeEngine {
  const retry = services.config.judgeRetry;
  if (m.model_source === 'external') {
    const route = { engine: 'upstream' as const, url: m.external_base_url!.replace(/\/+$/, ''), apiKey: m.external_api_token };
    return openAiCompatibleEngine('external', route, retry, services.config.urlFetch);
  }
  const route = services.engines.routeFor('chat', m.model);
  return route.engine === 'upstream' ? openAiCompatibleEngine('upstream', route, retry) : localJudgeEngine;
}

async function readRows(services: Services, job: EvaluationJob, fileId: string): Promise<Row[]> {
  const source = await inputRows(services, job.projectId, fileId);
  if (!source) throw new UserError(`The input file '${fileId}' does not exist (any more) in this project.`);
  const rows: Row[] = [];
  for await (const row of source) {
    if (rows.length === MAX_ROWS) throw new UserError(`The input file has more than ${MAX_ROWS} rows.`);
    rows.push(row);
  }
  if (rows.length === 0) throw new UserError('The input file has no rows.');
  return rows;
}

/** A template rendered with row `i`, or the user error naming what it lacks. */
function fill(template: string, row: Row, i: number, what: string): string {
  try {
    return render(template, row);
  } catch (err) {
    throw new UserError(`Row ${i + 1}: ${what} cannot be rendered: ${(err as Error).message}`);
  }
}

/** Obtains the responses of one evaluated model: a column's values, or generations. */
function responder(services: Services, m: string | ModelRequest | undefined, field: string) {
  if (m === undefined) return async (row: Row) => JSON.stringify(row);
  if (typeof m === 'string') {
    return async (row: Row, i: number) => {
      if (row[m] === undefined || row[m] === null) throw new UserError(`Row ${i + 1} has no column '${m}' (${field}).`);
      return typeof row[m] === 'string' ? (row[m] as string) : JSON.stringify(row[m]);
    };
  }
  const engine = engineFor(services, m);
  const slots = new Semaphore(workersOf(m));
  return async (row: Row, i: number) => {
    const call: ChatCall = {
      model: m.model,
      system: fill(m.system_template, row, i, `${field}.system_template`),
      user: fill(m.input_template, row, i, `${field}.input_template`),
      maxTokens: m.max_tokens,
      temperature: m.temperature,
    };
    return slots.runExclusive(() => engine.generate(call));
  };
}

const failure = (err: unknown) => (err instanceof Error ? err.message : String(err));

export async function evaluate(services: Services, job: EvaluationJob): Promise<Evaluated> {
  const type = job.type as EvaluationType;
  const p = JSON.parse(job.parameters) as Parameters;
  try {
    const rows = await readRows(services, job, p.input_data_file_path);
    // An answer interceptor (the control plane's scripted answers) may answer a call instead of the judge.
    const judge = interceptedJudge(services.engines.intercept, engineFor(services, p.judge));
    const judgeSlots = new Semaphore(workersOf(p.judge));
    const ask = (task: JudgeTask, row: Row, i: number) => {
      const call: ChatCall = {
        model: p.judge.model,
        system: `${fill(p.judge.system_template, row, i, 'parameters.judge.system_template')}\n\n${instructions(task)}`,
        user: userMessage(task),
        maxTokens: p.judge.max_tokens ?? DEFAULT_MAX_TOKENS,
        temperature: p.judge.temperature ?? DEFAULT_TEMPERATURE,
      };
      return judgeSlots.runExclusive(() => judge.judge(task, call));
    };
    const result =
      type === 'compare'
        ? await compare(services, p, rows, ask)
        : type === 'score'
          ? await single(services, p, rows, ask, 'score')
          : await single(services, p, rows, ask, 'classify');
    const resultFile = await placeResultFile(services, job.projectId, job.id, result.lines);
    const results =
      type === 'compare'
        ? compareResults(result.outcomes as Outcome<Winner>[], result.judgeFailures, resultFile.id)
        : type === 'score'
          ? scoreResults(result.outcomes as Outcome<number>[], p.pass_threshold!, resultFile.id)
          : classifyResults(result.outcomes as Outcome<string>[], p.labels!, p.pass_labels!, resultFile.id);
    return { outcome: 'completed', results, resultFile, summary: `Evaluated ${rows.length} rows with the ${judge.name} judge.` };
  } catch (err) {
    if (err instanceof UserError || err instanceof InputError) return { outcome: 'user_error', message: err.message };
    if (refusedUrl(err)) return { outcome: 'user_error', message: `The evaluation stopped: ${err.message}` };
    // Not repeated by the runner: the retries were made, and the job fails at once saying so.
    if (err instanceof RetriesExhausted) return { outcome: 'error', message: `The evaluation stopped: ${err.message}` };
    throw err;
  }
}

type Ask = (task: JudgeTask, row: Row, i: number) => Promise<string>;

interface Judged {
  outcomes: Outcome<unknown>[];
  /** Failed judge calls (a compared row can fail twice). */
  judgeFailures: number;
  lines: string[];
}

/** classify and score: one judge call per row. */
async function single(services: Services, p: Parameters, rows: Row[], ask: Ask, kind: 'classify' | 'score'): Promise<Judged> {
  const respond = responder(services, p.model_to_evaluate, 'parameters.model_to_evaluate');
  const judged = await Promise.all(
    rows.map(async (row, i): Promise<[Outcome<unknown>, Record<string, unknown>]> => {
      let response: string;
      try {
        response = await respond(row, i);
      } catch (err) {
        if (fatal(err)) throw err;
        return [{ generationFailed: true }, { generation_error: failure(err) }];
      }
      const task: JudgeTask =
        kind === 'classify'
          ? { kind, labels: p.labels!, response }
          : { kind, min: p.min_score!, max: p.max_score!, response, reference: columnText(row, REFERENCE_COLUMNS) };
      let answer: string;
      try {
        answer = await ask(task, row, i);
      } catch (err) {
        if (fatal(err)) throw err;
        return [{ judgeFailed: true }, { response, judge_error: failure(err) }];
      }
      const reading = kind === 'classify' ? readLabel(answer, p.labels!) : readScore(answer, p.min_score!, p.max_score!);
      const verdict = kind === 'classify' ? 'label' : 'score';
      if (!reading.ok) return [{ invalid: true }, { response, judge_answer: answer, [verdict]: null, [`invalid_${verdict}`]: reading.detail }];
      return [{ value: reading.value }, { response, judge_answer: answer, [verdict]: reading.value }];
    }),
  );
  return {
    outcomes: judged.map(([o]) => o),
    judgeFailures: judged.filter(([o]) => 'judgeFailed' in o).length,
    lines: judged.map(([, fields], i) => JSON.stringify({ ...rows[i], ...fields })),
  };
}

/** One judge pass of a comparison, in original terms, or why it gave no verdict. */
async function pass(ask: Ask, task: JudgeTask, row: Row, i: number, flipped: boolean): Promise<{ answer?: string; winner?: Winner; error?: string }> {
  let answer: string;
  try {
    answer = await ask(task, row, i);
  } catch (err) {
    if (fatal(err)) throw err;
    return { error: failure(err) };
  }
  const reading = readWinner(answer);
  if (!reading.ok) return { answer, error: reading.detail };
  return { answer, winner: flipped ? unflip(reading.value) : reading.value };
}

/** compare: each row judged with A first, then (unless disabled) with B first, and the two verdicts reconciled. */
async function compare(services: Services, p: Parameters, rows: Row[], ask: Ask): Promise<Judged> {
  const respondA = responder(services, p.model_a, 'parameters.model_a');
  const respondB = responder(services, p.model_b, 'parameters.model_b');
  const twoPass = !p.disable_position_bias_correction;
  let judgeFailures = 0;
  const judged = await Promise.all(
    rows.map(async (row, i): Promise<[Outcome<Winner>, Record<string, unknown>]> => {
      const generated = await Promise.allSettled([respondA(row, i), respondB(row, i)]);
      for (const g of generated) if (g.status === 'rejected' && fatal(g.reason)) throw g.reason;
      if (generated.some((g) => g.status === 'rejected')) {
        const errors = generated.map((g) => (g.status === 'rejected' ? failure(g.reason) : null));
        return [{ generationFailed: true }, { generation_error_a: errors[0], generation_error_b: errors[1] }];
      }
      const [a, b] = generated.map((g) => (g as PromiseFulfilledResult<string>).value) as [string, string];
      const reference = columnText(row, REFERENCE_COLUMNS) ?? columnText(row, PROMPT_COLUMNS);
      const [original, flipped] = await Promise.all([
        pass(ask, { kind: 'compare', first: a, second: b, reference }, row, i, false),
        twoPass ? pass(ask, { kind: 'compare', first: b, second: a, reference }, row, i, true) : undefined,
      ]);
      const fields: Record<string, unknown> = {
        response_a: a,
        response_b: b,
        judge_answer: original.answer ?? null,
        winner: original.winner ?? null,
        ...(original.error !== undefined && { judge_error: original.error }),
        ...(flipped && {
          flipped_judge_answer: flipped.answer ?? null,
          flipped_winner: flipped.winner ?? null,
          ...(flipped.error !== undefined && { flipped_judge_error: flipped.error }),
        }),
      };
      const fails = [original, flipped].filter((x) => x && x.winner === undefined).length;
      judgeFailures += fails;
      if (fails > 0) return [{ judgeFailed: true }, { ...fields, final_winner: null }];
      const winner = flipped ? reconcile(original.winner!, flipped.winner!) : original.winner!;
      return [{ value: winner }, { ...fields, final_winner: winner }];
    }),
  );
  return { outcomes: judged.map(([o]) => o), judgeFailures, lines: judged.map(([, fields], i) => JSON.stringify({ ...rows[i], ...fields })) };
}
