// The one place rollout rows become wire shapes.
import type { Rollout, RolloutStep } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { conditionsOf } from './steps.ts';

const time = <K extends string>(key: K, ms: bigint | null) => (ms === null ? {} : ({ [key]: iso(ms) } as Record<K, string>));

export function stepWire(s: RolloutStep): Wire<'RolloutStepStatus'> {
  return {
    stepIndex: s.stepIndex,
    targetTrafficPercent: s.trafficPercent,
    state: s.state as Wire<'RolloutStepStatus'>['state'],
    ...(s.metrics ? { metrics: JSON.parse(s.metrics) } : {}),
    ...time('startedAt', s.startedAt),
    ...time('completedAt', s.completedAt),
    ...(s.failureReason ? { failureReason: s.failureReason } : {}),
  };
}

export function rolloutWire(r: Rollout, steps: RolloutStep[]): Wire<'Rollout'> {
  const conditions = conditionsOf(r);
  return {
    id: r.id,
    endpointId: r.endpointId,
    sourceDeploymentId: r.sourceDeploymentId,
    targetDeploymentId: r.targetDeploymentId,
    strategy: r.strategy as Wire<'Rollout'>['strategy'],
    state: r.state as Wire<'Rollout'>['state'],
    ...(r.currentStep !== null ? { currentStep: r.currentStep } : {}),
    ...(r.currentTrafficPercent !== null ? { currentTrafficPercent: r.currentTrafficPercent } : {}),
    createdAt: iso(r.createdAt),
    ...time('startedAt', r.startedAt),
    ...time('completedAt', r.completedAt),
    etag: r.etag,
    status: {
      totalSteps: steps.length,
      steps: steps.map(stepWire),
      ...(conditions.length ? { condition: conditions[conditions.length - 1] } : {}),
      conditions,
      updatedAt: iso(r.updatedAt),
    },
    ...(r.pausedAt !== null ? { pauseInfo: { pausedAt: iso(r.pausedAt), ...(r.pauseReason ? { reason: r.pauseReason } : {}) } } : {}),
  };
}

export const listWire = <T>(data: T[], next: string | null) => ({ object: 'list' as const, data, next_cursor: next ?? '' });
