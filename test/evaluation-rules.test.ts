// The evaluation's pure rules, with hand-computed figures: the local judge's lexical verdicts, how a judge's answer
// is read, the reconciliation of a comparison's two passes, and the results' statistics.
import { describe, expect, test } from 'vitest';
import { localVerdict, wordF1, words } from '../server/engines/judge.ts';
import {
  classifyResults,
  compareResults,
  instructions,
  meanStd,
  type Outcome,
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
} from '../server/modules/evaluation/rules.ts';

const verdict = (answer: string) => JSON.parse(answer) as Record<string, unknown>;

describe('the local judge', () => {
  test('words are lowercase runs of letters and digits', () => {
    expect(words("It's 42 — Déjà vu!")).toEqual(['it', 's', '42', 'déjà', 'vu']);
  });

  test('word F1: 2PR/(P+R) over words counted with multiplicity', () => {
    // candidate "the cat sat" vs reference "the cat sat on the mat": 3 common; P = 3/3, R = 3/6; F1 = 2/3.
    expect(wordF1('The cat sat', 'the cat sat on the mat')).toBeCloseTo(2 / 3, 12);
    // "the the" vs "the": 1 common (the reference has one "the"); P = 1/2, R = 1; F1 = 2/3.
    expect(wordF1('the the', 'the')).toBeCloseTo(2 / 3, 12);
    expect(wordF1('dog', 'cat')).toBe(0);
    expect(wordF1('', 'cat')).toBe(0);
  });

  test('classify: the label occurring most often as a whole word; none or a tie is no label; it says it is local', () => {
    const labels = ['correct', 'incorrect', 'not sure'];
    const a = verdict(localVerdict({ kind: 'classify', labels, response: 'Correct. It is correct, not incorrect.' }));
    expect(a).toMatchObject({ judge: 'local-lexical-judge', label: 'correct' });
    expect(a.explanation).toContain("'correct' 2, 'incorrect' 1, 'not sure' 0");
    expect(verdict(localVerdict({ kind: 'classify', labels, response: 'I am not sure at all' })).label).toBe('not sure');
    expect(verdict(localVerdict({ kind: 'classify', labels, response: 'incorrectly so' })).label).toBeNull();
    expect(verdict(localVerdict({ kind: 'classify', labels, response: 'correct or incorrect' })).label).toBeNull();
  });

  test('score: F1 against the reference scaled into min..max, two decimals; no reference is a failure', () => {
    // F1 2/3 on 1..10: 1 + 2/3 * 9 = 7.
    expect(verdict(localVerdict({ kind: 'score', min: 1, max: 10, response: 'the cat sat', reference: 'the cat sat on the mat' })).score).toBe(7);
    // F1 2/3 on 0..1: 0.67.
    expect(verdict(localVerdict({ kind: 'score', min: 0, max: 1, response: 'the cat sat', reference: 'the cat sat on the mat' })).score).toBe(0.67);
    expect(() => localVerdict({ kind: 'score', min: 0, max: 1, response: 'x' })).toThrow(/reference/);
  });

  test('compare: the higher F1 against the reference wins, as shown; equal is a tie; nothing to compare with is a failure', () => {
    const reference = 'paris is the capital of france';
    expect(verdict(localVerdict({ kind: 'compare', first: 'Paris is the capital', second: 'London', reference })).winner).toBe('A');
    expect(verdict(localVerdict({ kind: 'compare', first: 'London', second: 'Paris is the capital', reference })).winner).toBe('B');
    expect(verdict(localVerdict({ kind: 'compare', first: 'Paris', second: 'france', reference })).winner).toBe('tie');
    expect(() => localVerdict({ kind: 'compare', first: 'a', second: 'b' })).toThrow(/reference or prompt/);
  });
});

describe("reading a judge's answer", () => {
  const labels = ['correct', 'incorrect'];
  test('a label: as JSON (also inside prose), or the one label a bare answer names as a whole word', () => {
    expect(readLabel('{"label": "incorrect"}', labels)).toEqual({ ok: true, value: 'incorrect' });
    expect(readLabel('My verdict: {"label": "correct"} because...', labels)).toEqual({ ok: true, value: 'correct' });
    expect(readLabel('The response is Correct.', labels)).toEqual({ ok: true, value: 'correct' });
    expect(readLabel('incorrectly phrased', labels)).toMatchObject({ ok: false, why: 'invalid' });
    expect(readLabel('correct or incorrect', labels)).toMatchObject({ ok: false, detail: expect.stringContaining('several') });
    expect(readLabel('{"label": "maybe"}', labels)).toMatchObject({ ok: false, why: 'invalid' });
  });

  test('a score: a number within min..max, as JSON or bare', () => {
    expect(readScore('{"score": 7}', 1, 10)).toEqual({ ok: true, value: 7 });
    expect(readScore('{"score": "7.5"}', 1, 10)).toEqual({ ok: true, value: 7.5 });
    expect(readScore(' 3 ', 1, 10)).toEqual({ ok: true, value: 3 });
    expect(readScore('{"score": 11}', 1, 10)).toMatchObject({ ok: false, why: 'invalid' });
    expect(readScore('great answer', 1, 10)).toMatchObject({ ok: false, why: 'invalid' });
  });

  test('a winner: A, B or tie, as JSON or bare; anything else is unreadable', () => {
    expect(readWinner('{"winner": "B"}')).toEqual({ ok: true, value: 'B' });
    expect(readWinner('"a".')).toEqual({ ok: true, value: 'A' });
    expect(readWinner('Tie')).toEqual({ ok: true, value: 'tie' });
    expect(readWinner('both are fine')).toMatchObject({ ok: false, why: 'unreadable' });
  });

  test('the instructions and the user message say what to answer and show the responses in order', () => {
    expect(instructions({ kind: 'classify', labels, response: '' })).toBe(
      'Classify the response with exactly one of these labels: "correct", "incorrect". Answer with JSON: {"label": "<label>"}.',
    );
    expect(userMessage({ kind: 'compare', first: 'one', second: 'two' })).toBe('Response A:\none\n\nResponse B:\ntwo');
    expect(userMessage({ kind: 'score', min: 0, max: 1, response: 'text' })).toBe('text');
  });
});

describe('position bias correction', () => {
  test('a flipped verdict is read back into original terms', () => {
    expect(['A', 'B', 'tie'].map((w) => unflip(w as Winner))).toEqual(['B', 'A', 'tie']);
  });

  test('agreement stands; any disagreement, one tie included, is a tie', () => {
    const table: [Winner, Winner, Winner][] = [
      ['A', 'A', 'A'],
      ['B', 'B', 'B'],
      ['tie', 'tie', 'tie'],
      ['A', 'B', 'tie'],
      ['B', 'A', 'tie'],
      ['A', 'tie', 'tie'],
      ['tie', 'B', 'tie'],
    ];
    for (const [original, flipped, expected] of table) expect(reconcile(original, flipped), `${original}/${flipped}`).toBe(expected);
    // A judge that always prefers the response shown first says A, then (flipped) A again = B in original terms: a tie.
    expect(reconcile('A', unflip('A'))).toBe('tie');
  });
});

describe('results', () => {
  test('population mean and standard deviation', () => {
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population variance 4, std 2.
    expect(meanStd([2, 4, 4, 4, 5, 5, 7, 9])).toEqual({ mean: 5, std: 2 });
    expect(meanStd([])).toEqual({ mean: 0, std: 0 });
  });

  test('classify: counts per label (zeros included), pass percentage over validly labelled rows, failures counted apart', () => {
    const outcomes: Outcome<string>[] = [
      { value: 'yes' },
      { value: 'yes' },
      { value: 'no' },
      { value: 'maybe' },
      { invalid: true },
      { judgeFailed: true },
      { generationFailed: true },
    ];
    const r = classifyResults(outcomes, ['yes', 'no', 'maybe', 'never'], ['yes', 'maybe'], 'file-1');
    expect(JSON.parse(r.label_counts!)).toEqual({ yes: 2, no: 1, maybe: 1, never: 0 });
    expect(r).toMatchObject({ pass_percentage: 75, invalid_label_count: 1, judge_fail_count: 1, generation_fail_count: 1, result_file_id: 'file-1' });
    expect(classifyResults([{ invalid: true }], ['yes', 'no'], ['yes'], 'f').pass_percentage).toBeNull();
  });

  test('score: statistics of the valid scores, pass percentage at or above the threshold, failed samples', () => {
    const outcomes: Outcome<number>[] = [
      { value: 2 },
      { value: 4 },
      { value: 4 },
      { value: 4 },
      { value: 5 },
      { value: 5 },
      { value: 7 },
      { value: 9 },
      { invalid: true },
      { judgeFailed: true },
    ];
    const r = scoreResults(outcomes, 5, 'file-2');
    // 4 of 8 valid scores are >= 5: 50 %.
    expect(r).toEqual({
      aggregated_scores: { mean_score: 5, std_score: 2, pass_percentage: 50 },
      generation_fail_count: 0,
      judge_fail_count: 1,
      invalid_score_count: 1,
      failed_samples: 2,
      result_file_id: 'file-2',
    });
  });

  test('compare: wins and ties of the reconciled verdicts; judge failures as counted across both passes', () => {
    const outcomes: Outcome<Winner>[] = [{ value: 'A' }, { value: 'A' }, { value: 'B' }, { value: 'tie' }, { judgeFailed: true }, { generationFailed: true }];
    expect(compareResults(outcomes, 2, 'file-3')).toEqual({
      A_wins: 2,
      B_wins: 1,
      Ties: 1,
      generation_fail_count: 1,
      judge_fail_count: 2,
      result_file_id: 'file-3',
    });
  });
});

describe('templates and workers', () => {
  test('Jinja2 over the row; a column the row lacks is an error, not empty text', () => {
    expect(render('Q: {{ question }} ({{ meta.lang | upper }})', { question: 'Why <b>?', meta: { lang: 'en' } })).toBe('Q: Why <b>? (EN)');
    expect(() => render('{{ missing }}', {})).toThrow(/undefined|null/);
  });

  test('num_workers defaults per source; a dedicated endpoint gets at least 5', () => {
    expect(workersOf({ model_source: 'serverless' })).toBe(25);
    expect(workersOf({ model_source: 'external' })).toBe(2);
    expect(workersOf({ model_source: 'external', num_workers: 7 })).toBe(7);
    expect(workersOf({ model_source: 'dedicated', num_workers: 2 })).toBe(5);
    expect(workersOf({ model_source: 'dedicated', num_workers: 9 })).toBe(9);
  });
});
