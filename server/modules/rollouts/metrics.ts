// A rollout's metric rules, checked against what was really served (the ServedRequest rows dedicated records): the
// target's rows of the step's window, and for a regression check the source's rows of the same window.
import type { Tx } from '../../db/index.ts';
import { nearestRank, servedRows } from '../dedicated/index.ts';
import type { Wire } from '../types.ts';
import type { MetricRule } from './rules.ts';

type Row = { status: number; latencyMs: number; createdAt: bigint };
export type MetricResult = Wire<'MetricResult'>;

function stat(rule: MetricRule, sorted: number[]): number {
  switch (rule.stat) {
    case 'METRIC_STAT_TYPE_MIN':
      return sorted[0]!;
    case 'METRIC_STAT_TYPE_MAX':
      return sorted[sorted.length - 1]!;
    case 'METRIC_STAT_TYPE_PERCENTILE':
      return nearestRank(sorted, rule.percentile!);
    default:
      return sorted.reduce((a, b) => a + b, 0) / sorted.length;
  }
}

/** Requests in flight over [since, until), time-weighted, from each answer's span (its end and latency). */
function inflight(rule: MetricRule, rows: Row[], since: number, until: number): number {
  const edges: [number, number][] = [];
  for (const r of rows) {
    const end = Math.min(Number(r.createdAt), until);
    const start = Math.max(Number(r.createdAt) - r.latencyMs, since);
    if (end > start) edges.push([start, 1], [end, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  // The levels held and for how long, over the whole window.
  const spans: { level: number; ms: number }[] = [];
  let level = 0;
  let at = since;
  for (const [t, d] of edges) {
    if (t > at) spans.push({ level, ms: t - at });
    level += d;
    at = Math.max(at, t);
  }
  if (until > at) spans.push({ level, ms: until - at });
  const total = spans.reduce((n, s) => n + s.ms, 0);
  if (total === 0) return 0;
  const levels = spans.map((s) => s.level);
  if (rule.stat === 'METRIC_STAT_TYPE_MIN') return Math.min(...levels);
  if (rule.stat === 'METRIC_STAT_TYPE_MAX') return Math.max(...levels);
  if (rule.stat === 'METRIC_STAT_TYPE_PERCENTILE') {
    const sorted = [...spans].sort((a, b) => a.level - b.level);
    let held = 0;
    for (const s of sorted) {
      held += s.ms;
      if (held >= (rule.percentile! / 100) * total) return s.level;
    }
    return sorted[sorted.length - 1]!.level;
  }
  return spans.reduce((n, s) => n + s.level * s.ms, 0) / total;
}

/** A rule's figure over some rows; undefined when there are none (nothing to judge). */
export function figureOf(rule: MetricRule, rows: Row[], since: number, until: number): number | undefined {
  if (rows.length === 0) return undefined;
  if (rule.name === 'router_error_rate') return rows.filter((r) => r.status >= 500).length / rows.length;
  if (rule.name === 'inflight_requests') return inflight(rule, rows, since, until);
  return stat(
    rule,
    rows.map((r) => r.latencyMs).sort((a, b) => a - b),
  );
}

const holds = (value: number, operator: string, threshold: number) =>
  operator === 'THRESHOLD_OPERATOR_GT'
    ? value > threshold
    : operator === 'THRESHOLD_OPERATOR_GTE'
      ? value >= threshold
      : operator === 'THRESHOLD_OPERATOR_LT'
        ? value < threshold
        : value <= threshold;

/** One rule's result over the target's (and source's) rows of its window. */
export function judge(rule: MetricRule, target: Row[], source: Row[], since: number, until: number): MetricResult {
  const base = { name: rule.name, stat: rule.stat, ...(rule.percentile !== undefined ? { percentile: rule.percentile } : {}) };
  const targetValue = figureOf(rule, target, since, until);
  if (rule.thresholdCheck) {
    const { value, operator } = rule.thresholdCheck;
    const result = { ...base, check: 'METRIC_CHECK_TYPE_THRESHOLD' as const, threshold: value, operator };
    if (targetValue === undefined) return { ...result, verdict: 'METRIC_VERDICT_UNAVAILABLE' };
    return { ...result, targetValue, verdict: holds(targetValue, operator, value) ? 'METRIC_VERDICT_PASS' : 'METRIC_VERDICT_BREACHED' };
  }
  const { maxRegressionPercent, direction } = rule.regressionCheck!;
  const sourceValue = figureOf(rule, source, since, until);
  const result = {
    ...base,
    check: 'METRIC_CHECK_TYPE_REGRESSION' as const,
    maxRegressionPercent,
    direction,
    ...(targetValue !== undefined ? { targetValue } : {}),
    ...(sourceValue !== undefined ? { sourceValue } : {}),
  };
  if (targetValue === undefined || sourceValue === undefined) return { ...result, verdict: 'METRIC_VERDICT_UNAVAILABLE' };
  const allowed = (sourceValue * maxRegressionPercent) / 100;
  const worse = direction === 'REGRESSION_DIRECTION_HIGHER_IS_WORSE' ? targetValue > sourceValue + allowed : targetValue < sourceValue - allowed;
  return { ...result, verdict: worse ? 'METRIC_VERDICT_BREACHED' : 'METRIC_VERDICT_PASS' };
}

/** Every rule's result for the step that began at `stepStart`, read up to `now`. */
export async function checkRules(
  tx: Tx,
  r: { endpointId: string; sourceDeploymentId: string; targetDeploymentId: string },
  rules: MetricRule[],
  stepStart: number,
  now: number,
): Promise<MetricResult[]> {
  const results: MetricResult[] = [];
  for (const rule of rules) {
    const windowMs = rule.window ? Math.round(Number(rule.window.slice(0, -1)) * 1000) : Number.POSITIVE_INFINITY;
    const since = Math.max(stepStart, now - windowMs);
    const until = now + 1;
    const read = (deploymentId: string) => servedRows(tx, { endpointId: r.endpointId, deploymentId, since, until });
    // One query at a time: a transaction's client runs one statement at a time anyway.
    const target = await read(r.targetDeploymentId);
    const source = rule.regressionCheck ? await read(r.sourceDeploymentId) : [];
    results.push(judge(rule, target, source, since, until));
  }
  return results;
}
