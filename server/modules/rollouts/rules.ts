// What a rollout request must be (the tag's **Creating**), and the plan it gives: its strategy, steps and step
// length, with the defaults filled in (what preview-defaults answers and what a rollout stores).
import type { Config } from '../../core/config.ts';
import { duration } from '../../core/config.ts';
import { badRequest } from '../../core/errors.ts';
import type { RequestBody } from '../types.ts';

export type RolloutRequest = RequestBody<'createRollout'>;
export type MetricRule = NonNullable<RolloutRequest['metrics']>[number];

export const DEFAULT_CANARY = [10, 25, 50, 100];
export const ROLLING = [25, 50, 75, 100];
export const BLUE_GREEN = [100];
/** A step's length when the request gives none: `DURATION_ROLLOUT_STEP_MS`. */
export const STEP = { duration: 'rollout_step', defaultMs: 300_000 };
const LONGEST_STEP_MS = 7 * 24 * 3600 * 1000;

export interface Plan {
  strategy: 'ROLLOUT_STRATEGY_TYPE_CANARY' | 'ROLLOUT_STRATEGY_TYPE_ROLLING' | 'ROLLOUT_STRATEGY_TYPE_BLUE_GREEN';
  steps: { traffic: number; replicas?: number }[];
  stepMs: number;
  /** The request with its defaults filled in. */
  spec: RolloutRequest;
}

/** `"<seconds>s"` in ms; 400 naming `param` when not more than 0 or longer than a week. */
export function parseDuration(value: string, param: string): number {
  const ms = Math.round(Number(value.slice(0, -1)) * 1000);
  if (!(ms > 0) || ms > LONGEST_STEP_MS) throw badRequest(`'${param}' must be more than 0s and at most ${LONGEST_STEP_MS / 1000}s.`, param, 'invalid_duration');
  return ms;
}

const seconds = (ms: number) => `${ms / 1000}s`;

/**
 * Exactly one of `fields` is given: none answers 400 naming the first (what to give), several name the second given
 * (the one too many), each with words for what was sent.
 */
function exactlyOne(body: object, fields: readonly string[], noun: string, code: string, at = ''): void {
  const given = fields.filter((f) => (body as Record<string, unknown>)[f] !== undefined);
  const list = `${fields.slice(0, -1).join(', ')} or ${fields.at(-1)}`;
  if (given.length === 0) throw badRequest(`Give a ${noun}: ${list}.`, `${at}${fields[0]}`, code);
  if (given.length > 1) throw badRequest(`Give one ${noun} only (${list}): this request gives ${given.join(' and ')}.`, `${at}${given[1]}`, code);
}

function checkRule(rule: MetricRule, i: number): void {
  const at = `metrics.${i}`;
  exactlyOne(rule, ['thresholdCheck', 'regressionCheck'], 'check', 'invalid_metric_rule', `${at}.`);
  if (rule.stat === 'METRIC_STAT_TYPE_PERCENTILE') {
    if (rule.percentile === undefined || rule.percentile < 1 || rule.percentile > 100) {
      throw badRequest(`A percentile rule needs 'percentile' from 1 to 100.`, `${at}.percentile`, 'invalid_percentile');
    }
  }
  if (rule.window !== undefined) parseDuration(rule.window, `${at}.window`);
}

function checkReplicas(value: number | undefined, param: string, least: number): void {
  if (value !== undefined && value < least) throw badRequest(`'${param}' must be at least ${least}.`, param, 'minimum');
}

/** Checks a request's own fields (not yet its deployments) and answers its plan. */
export function planOf(body: RolloutRequest, config: Pick<Config, 'durations'>): Plan {
  const fallbackMs = duration(config, STEP.duration, STEP.defaultMs);
  exactlyOne(body, ['canary', 'blueGreen', 'rolling'], 'strategy', 'invalid_strategy');
  (body.metrics ?? []).forEach(checkRule);
  checkReplicas(body.finalSourceReplicas, 'finalSourceReplicas', 0);
  checkReplicas(body.finalTargetReplicas, 'finalTargetReplicas', 1);
  const base = { ...body, metrics: body.metrics ?? [] };
  if (body.canary) {
    const steps: Plan['steps'] = body.canary.steps?.length ? body.canary.steps : DEFAULT_CANARY.map((traffic) => ({ traffic }));
    steps.forEach((s, i) => {
      const previous = i === 0 ? 0 : steps[i - 1]!.traffic;
      if (s.traffic < 1 || s.traffic > 100 || s.traffic <= previous) {
        throw badRequest(
          `Each step's traffic must be from 1 to 100, above the step before it (${previous}).`,
          `canary.steps.${i}.traffic`,
          'invalid_rollout_step',
        );
      }
      checkReplicas(s.replicas, `canary.steps.${i}.replicas`, 0);
    });
    const stepMs = body.canary.stepInterval !== undefined ? parseDuration(body.canary.stepInterval, 'canary.stepInterval') : fallbackMs;
    return { strategy: 'ROLLOUT_STRATEGY_TYPE_CANARY', steps, stepMs, spec: { ...base, canary: { steps, stepInterval: seconds(stepMs) } } };
  }
  const blueGreen = body.blueGreen !== undefined;
  return {
    strategy: blueGreen ? 'ROLLOUT_STRATEGY_TYPE_BLUE_GREEN' : 'ROLLOUT_STRATEGY_TYPE_ROLLING',
    steps: (blueGreen ? BLUE_GREEN : ROLLING).map((traffic) => ({ traffic })),
    stepMs: fallbackMs,
    spec: base,
  };
}
