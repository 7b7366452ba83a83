// How a rollout moves: every move of its machine with what goes with it, in the caller's transaction: the
// endpoint's split (taken, stepped, handed back), its steps' own moves, the step's timer on the durable runner, the
// final replicas. The handlers (the caller's moves) and the runner's step (the timer's) both come here.
import type { Rollout, RolloutStep } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Db, Tx } from '../../db/index.ts';
import { type Progression, type Timing, transition } from '../../runner/progress.ts';
import { enqueue } from '../../runner/runner.ts';
import { type SplitEntry, setReplicas, steerTraffic } from '../dedicated/index.ts';
import type { Wire } from '../types.ts';
import { type RolloutState, rolloutMachine, rolloutSteps, rollouts } from './machine.ts';
import { checkRules, type MetricResult } from './metrics.ts';
import type { RolloutRequest } from './rules.ts';

export type Condition = Wire<'RolloutCondition'>;

const owner = (r: Rollout) => `rollout:${r.id}` as const;
export const specOf = (r: Rollout): RolloutRequest => JSON.parse(r.spec);
export const conditionsOf = (r: Rollout): Condition[] => JSON.parse(r.conditions);
const iso = (ms: number) => new Date(ms).toISOString();

export const stepsOf = (db: Db | Tx, rolloutId: string) => db.rolloutStep.findMany({ where: { rolloutId }, orderBy: { stepIndex: 'asc' } });

/** The split of a step: exactly source `100 - p`, target `p`. */
const splitAt = (r: Rollout, percent: number): SplitEntry[] => [
  { deploymentId: r.sourceDeploymentId, weight: 100 - percent },
  { deploymentId: r.targetDeploymentId, weight: percent },
];

/** The runner's timer of the step now under way: it fires once, for this visit of RUNNING (its epoch). */
async function schedule(tx: Tx, timing: Timing, r: Rollout, delayMs: number): Promise<void> {
  await enqueue(tx, timing.clock, {
    kind: rolloutMachine.kind,
    subjectId: r.id,
    projectId: r.projectId,
    payload: { state: r.state, epoch: r.epoch },
    delayMs,
  });
}

/** Begins step `step` of a rollout that `moved` into RUNNING: its share of traffic, its own move, its timer. */
async function begin(tx: Tx, timing: Timing, r: Rollout, step: RolloutStep): Promise<void> {
  await steerTraffic(tx, timing.clock, r.endpointId, owner(r), splitAt(r, step.trafficPercent));
  await transition(tx, timing, rolloutSteps, step, 'begin');
  await schedule(tx, timing, r, r.stepMs);
}

const stepData = (step: RolloutStep, endsAt: number) => ({
  currentStep: step.stepIndex,
  currentTrafficPercent: step.trafficPercent,
  stepEndsAt: BigInt(endsAt),
});

/** The caller's `start`: the split taken (as it was, kept to restore), step 0 begun. */
export async function start(tx: Tx, timing: Timing, r: Rollout): Promise<Rollout> {
  const now = timing.clock.now();
  const e = await tx.dedicatedEndpoint.findUniqueOrThrow({ where: { id: r.endpointId } });
  const [first] = await stepsOf(tx, r.id);
  const moved = await transition(tx, timing, rollouts, r, 'start', {
    data: { ...stepData(first!, now + r.stepMs), originalSplit: e.trafficSplit, startedAt: BigInt(now) },
  });
  await begin(tx, timing, moved, first!);
  return moved;
}

export async function pause(tx: Tx, timing: Timing, r: Rollout, reason: string | undefined): Promise<Rollout> {
  const now = timing.clock.now();
  const remainingMs = Math.max(0, Number(r.stepEndsAt ?? now) - now);
  return transition(tx, timing, rollouts, r, 'pause', { data: { remainingMs, stepEndsAt: null, pausedAt: BigInt(now), pauseReason: reason ?? null } });
}

export async function resume(tx: Tx, timing: Timing, r: Rollout): Promise<Rollout> {
  const now = timing.clock.now();
  const remaining = r.remainingMs ?? 0;
  const moved = await transition(tx, timing, rollouts, r, 'resume', {
    data: { stepEndsAt: BigInt(now + remaining), remainingMs: null, pausedAt: null, pauseReason: null },
  });
  await schedule(tx, timing, moved, remaining);
  return moved;
}

/** The step under way (RUNNING), if any. */
const running = async (tx: Tx, r: Rollout) => (await stepsOf(tx, r.id)).find((s) => s.state === 'ROLLOUT_STEP_STATE_RUNNING');

/** All traffic to the target, the final replicas, the split handed back; COMPLETED by `event`. */
async function finish(tx: Tx, timing: Timing, r: Rollout, event: 'complete' | 'promote'): Promise<Rollout> {
  const now = timing.clock.now();
  const spec = specOf(r);
  const conditions = conditionsOf(r);
  for (const [id, replicas, field] of [
    [r.sourceDeploymentId, spec.finalSourceReplicas, 'finalSourceReplicas'],
    [r.targetDeploymentId, spec.finalTargetReplicas, 'finalTargetReplicas'],
  ] as const) {
    const d = replicas === undefined ? null : await tx.deployment.findUnique({ where: { id } });
    if (d && !(await setReplicas(tx, timing, d, replicas!))) {
      conditions.push({
        category: 'ROLLOUT_FAILURE_CATEGORY_CAPACITY_EXHAUSTED',
        type: 'CapacityLimited',
        message: `${field} ${replicas}: not enough free capacity for deployment '${id}'; it keeps its replicas.`,
        observedAt: iso(now),
      });
    }
  }
  await steerTraffic(tx, timing.clock, r.endpointId, owner(r), [{ deploymentId: r.targetDeploymentId, weight: 100 }], { release: true });
  return transition(tx, timing, rollouts, r, event, {
    data: { currentTrafficPercent: 100, stepEndsAt: null, remainingMs: null, completedAt: BigInt(now), conditions: JSON.stringify(conditions) },
  });
}

export async function promote(tx: Tx, timing: Timing, r: Rollout): Promise<Rollout> {
  rolloutMachine.next(r.state, 'promote');
  const step = await running(tx, r);
  if (step) await transition(tx, timing, rolloutSteps, step, 'pass');
  return finish(tx, timing, r, 'promote');
}

/** Ends a started rollout by `event` with its condition: the running step failed, the split restored (or frozen) and handed back. */
async function stop(
  tx: Tx,
  timing: Timing,
  r: Rollout,
  event: 'abort' | 'cancel',
  condition: Condition,
  restore: boolean,
  step?: { metrics?: MetricResult[] },
) {
  const now = timing.clock.now();
  const current = await running(tx, r);
  if (current) {
    await transition(tx, timing, rolloutSteps, current, 'fail', {
      data: { failureReason: condition.message, ...(step?.metrics ? { metrics: JSON.stringify(step.metrics) } : {}) },
    });
  }
  // An endpoint deleted under a running rollout has no split left to restore.
  if (r.startedAt !== null && (await tx.dedicatedEndpoint.findUnique({ where: { id: r.endpointId } }))) {
    const split: SplitEntry[] | null = restore && r.originalSplit ? JSON.parse(r.originalSplit) : null;
    await steerTraffic(tx, timing.clock, r.endpointId, owner(r), split, { release: true });
  }
  const restored = restore && r.originalSplit ? { currentTrafficPercent: 0 } : {};
  return transition(tx, timing, rollouts, r, event, {
    data: {
      ...restored,
      stepEndsAt: null,
      remainingMs: null,
      completedAt: BigInt(now),
      conditions: JSON.stringify([...conditionsOf(r), { ...condition, observedAt: iso(now) }]),
    },
  });
}

export async function cancel(tx: Tx, timing: Timing, r: Rollout, reason: string, disposition: string | undefined): Promise<Rollout> {
  rolloutMachine.next(r.state, 'cancel');
  const condition: Condition = { category: 'ROLLOUT_FAILURE_CATEGORY_ABORTED_BY_OPERATOR', message: `Canceled: ${reason}`, atStep: r.currentStep ?? undefined };
  return stop(tx, timing, r, 'cancel', condition, disposition !== 'CANCEL_DISPOSITION_FREEZE');
}

/** The runner's step when a step's time is up: its rules checked, then the next step, completion, or an abort. */
async function stepDone(tx: Tx, timing: Timing, id: string): Promise<void> {
  const r = await tx.rollout.findUniqueOrThrow({ where: { id } });
  const now = timing.clock.now();
  const steps = await stepsOf(tx, r.id);
  const step = steps.find((s) => s.state === 'ROLLOUT_STEP_STATE_RUNNING')!;
  if (!(await tx.dedicatedEndpoint.findUnique({ where: { id: r.endpointId } }))) {
    const message = `Endpoint '${r.endpointId}' was deleted during step ${step.stepIndex}.`;
    await stop(tx, timing, r, 'abort', { category: 'ROLLOUT_FAILURE_CATEGORY_ROUTING_ERROR', message, atStep: step.stepIndex }, false);
    return;
  }
  const results = await checkRules(tx, r, specOf(r).metrics ?? [], Number(step.startedAt), now);
  const breached = results.filter((m) => m.verdict === 'METRIC_VERDICT_BREACHED');
  if (breached.length) {
    const names = breached.map((m) => `${m.name} ${m.targetValue}`).join(', ');
    const message = `Step ${step.stepIndex} (${step.trafficPercent}% to the target) breached its metric rules: ${names}.`;
    const condition: Condition = { category: 'ROLLOUT_FAILURE_CATEGORY_METRIC_REGRESSION', message, atStep: step.stepIndex, metrics: breached };
    await stop(tx, timing, r, 'abort', condition, true, { metrics: results });
    return;
  }
  await transition(tx, timing, rolloutSteps, step, 'pass', { data: { metrics: JSON.stringify(results) } });
  const next = steps[step.stepIndex + 1];
  if (!next) {
    await finish(tx, timing, r, 'complete');
    return;
  }
  const moved = await transition(tx, timing, rollouts, r, 'advance', { data: stepData(next, now + r.stepMs) });
  await begin(tx, timing, moved, next);
}

/** The runner's side of the machine: a step's timer, and what happens when the runner cannot carry it out. */
export function rolloutProgression(timing: Timing): Progression<RolloutState> {
  return {
    stored: rollouts,
    steps: { ROLLOUT_STATE_RUNNING: (tx, id) => stepDone(tx, timing, id) },
    giveUp: async (tx, id) => {
      const r = await tx.rollout.findUniqueOrThrow({ where: { id } });
      const message = 'The rollout could not be carried out on the server; the split was restored.';
      await stop(tx, timing, r, 'abort', { category: 'ROLLOUT_FAILURE_CATEGORY_INTERNAL', message, atStep: r.currentStep ?? undefined }, true);
    },
  };
}
