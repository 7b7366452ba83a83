// Module `experiments`: rows -> wire shapes (camelCase, as the public platform's v2 API). Optional fields are absent
// rather than null.
import type { AbExperiment, ShadowExperiment, ShadowTarget } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { ServedFigures } from '../dedicated/index.ts';
import type { Wire } from '../types.ts';
import type { Member, Sampling } from './rules.ts';

/** A page of a v2 list: `next_cursor` is "" on the last page. */
export const listWire = <T>(data: T[], next: string | null) => ({ object: 'list' as const, data, next_cursor: next ?? '' });

export function abExperimentWire(x: AbExperiment): Wire<'ABExperiment'> {
  return {
    id: x.id,
    projectId: x.projectId,
    endpointId: x.endpointId,
    name: x.name,
    ...(x.description !== null && { description: x.description }),
    members: JSON.parse(x.members) as Member[],
    createdBy: x.createdBy,
    createdAt: iso(x.createdAt),
    updatedAt: iso(x.updatedAt),
    etag: x.etag,
  };
}

export function shadowTargetWire(t: ShadowTarget): Wire<'ShadowTarget'> {
  return {
    id: t.id,
    experimentId: t.experimentId,
    name: t.name,
    targetDeploymentId: t.targetDeploymentId,
    ...(t.description !== null && { description: t.description }),
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
    etag: t.etag,
  };
}

/** `targets`: the experiment's (its state says whether it has any); `shown`: those the answer lists. */
export function shadowExperimentWire(x: ShadowExperiment, targets: ShadowTarget[], shown = true): Wire<'ShadowExperiment'> {
  return {
    id: x.id,
    projectId: x.projectId,
    endpointId: x.endpointId,
    name: x.name,
    ...(x.description !== null && { description: x.description }),
    source: { endpoint: { sampling: JSON.parse(x.sampling) as Sampling } },
    targets: shown ? targets.map(shadowTargetWire) : [],
    createdBy: x.createdBy,
    createdAt: iso(x.createdAt),
    updatedAt: iso(x.updatedAt),
    etag: x.etag,
    state: targets.length > 0 ? 'SHADOW_EXPERIMENT_STATE_ACTIVE' : 'SHADOW_EXPERIMENT_STATE_INACTIVE',
  };
}

const latencyWire = (f: ServedFigures): Wire<'ShadowLatency'> => ({ ...f.latencyMs });

/** Requests answered, errors (5xx), their rate as a percentage and latency. */
export const figuresWire = (f: ServedFigures): Wire<'ShadowPrimaryResults'> => ({
  requests: f.requests,
  errors: f.errors,
  errorRate: f.errorRate * 100,
  latencyMs: latencyWire(f),
});

/** A shadow experiment's report: the callers' figures, then each target's copies and how many matched. */
export function shadowResultsWire(
  x: ShadowExperiment,
  range: { since: number; until: number },
  primary: ServedFigures,
  targets: { target: ShadowTarget; figures: ServedFigures; compared: number; matched: number }[],
): Wire<'ShadowExperimentResults'> {
  return {
    experimentId: x.id,
    endpointId: x.endpointId,
    timeRange: { startTime: iso(range.since), endTime: iso(range.until) },
    primary: figuresWire(primary),
    targets: targets.map(({ target, figures, compared, matched }) => ({
      targetId: target.id,
      name: target.name,
      targetDeploymentId: target.targetDeploymentId,
      copies: figures.requests,
      errors: figures.errors,
      errorRate: figures.errorRate * 100,
      latencyMs: latencyWire(figures),
      compared,
      matched,
      matchRate: compared ? (matched / compared) * 100 : null,
    })),
  };
}
