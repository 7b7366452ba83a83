// Module `evaluation`: rows -> wire shapes.
import type { EvaluationJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import type { StatusUpdate } from './machine.ts';
import { masked, type Parameters } from './rules.ts';

type Results = Wire<'EvaluationResults'>;

const resultsOf = (j: EvaluationJob): Results | null => (j.results === null ? null : (JSON.parse(j.results) as Results));

export function evaluationWire(j: EvaluationJob): Wire<'EvaluationJob'> {
  const updates: StatusUpdate[] = JSON.parse(j.statusUpdates);
  return {
    workflow_id: j.id,
    type: j.type as Wire<'EvaluationJob'>['type'],
    owner_id: j.projectId,
    status: j.status as Wire<'EvaluationJob'>['status'],
    status_updates: updates.map((u) => ({ status: u.status, message: u.message, timestamp: iso(u.at) })),
    parameters: masked(JSON.parse(j.parameters) as Parameters),
    created_at: iso(j.createdAt),
    updated_at: iso(j.updatedAt),
    ...(j.results !== null && { results: resultsOf(j)! }),
  };
}

export function evaluationStatusWire(j: EvaluationJob): { status: Wire<'EvaluationStatus'>; results?: Results } {
  const results = resultsOf(j);
  return { status: j.status as Wire<'EvaluationStatus'>, ...(results !== null && { results }) };
}
