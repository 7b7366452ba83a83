// Rows to the RL tag's wire shapes (formatting only).
import type { RlCheckpoint, RlModelResources, RlOperation, RlSession } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';

export function resourcesWire(r: RlModelResources): Wire<'RlModelResources'> {
  return {
    id: r.id,
    status: r.status as Wire<'RlModelResources'>['status'],
    base_model: r.baseModel,
    compute_config: { num_generator_replicas: r.numGeneratorReplicas },
    lora_enabled: r.loraEnabled,
    optimizer_config: JSON.parse(r.optimizerConfig),
    created_by: r.createdBy,
    created_at: iso(r.createdAt),
    updated_at: iso(r.updatedAt),
    ...(r.errorCode && {
      error: {
        code: r.errorCode as NonNullable<Wire<'RlModelResources'>['error']>['code'],
        message: r.errorMessage ?? '',
        occurred_at: iso(r.erroredAt ?? r.updatedAt),
      },
    }),
  };
}

export function sessionWire(s: RlSession, checkpoints: RlCheckpoint[]): Wire<'RlTrainingSession'> {
  const of = (kind: string) => checkpoints.filter((c) => c.kind === kind);
  return {
    id: s.id,
    base_model: s.baseModel,
    model_resources_id: s.modelResourcesId,
    status: s.status as Wire<'RlTrainingSession'>['status'],
    step: s.step,
    ...(s.displayName !== null && { display_name: s.displayName }),
    metadata: JSON.parse(s.metadata),
    ...(s.loraConfig && { lora_config: loraWire(JSON.parse(s.loraConfig)) }),
    ...(s.resumeFromCheckpoint && { resume_from_checkpoint_id: s.resumeFromCheckpoint }),
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    created_by: s.createdBy,
    ...(s.errorCode && {
      error: {
        code: s.errorCode as NonNullable<Wire<'RlTrainingSession'>['error']>['code'],
        message: s.errorMessage ?? '',
        occurred_at: iso(s.erroredAt ?? s.updatedAt),
      },
    }),
    inference_checkpoints: of('inference').map((c) => ({
      id: c.id,
      step: c.step,
      created_at: iso(c.createdAt),
      registration: { model_name: c.modelName!, model_object_id: c.modelId!, registered_at: iso(c.createdAt) },
    })),
    training_checkpoints: of('training').map((c) => ({ id: c.id, step: c.step, created_at: iso(c.createdAt), registration: { object_id: c.id } })),
  };
}

const loraWire = (l: { rank: number; alpha: number; dropout: number; seed: string; trainUnembed: boolean }) => ({
  rank: l.rank,
  alpha: l.alpha,
  dropout: l.dropout,
  seed: l.seed,
  train_unembed: l.trainUnembed,
});

/** An operation: its status, its output once COMPLETED, its error once FAILED. */
export function operationWire(op: RlOperation) {
  return {
    id: op.id,
    status: op.status as Wire<'RlForwardOperation'>['status'],
    ...(op.output !== null && { output: JSON.parse(op.output) }),
    ...(op.errorCode && { error: { code: op.errorCode as NonNullable<Wire<'RlForwardOperation'>['error']>['code'], message: op.errorMessage ?? '' } }),
  };
}

export const listMeta = (limit: number, next: string | null) => ({ has_more: next !== null, limit, ...(next !== null && { next_cursor: next }) });
