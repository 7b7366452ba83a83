// Module `model-catalogue`: rows -> wire shapes (camelCase, as the public platform's v2 API). Counts and sizes are
// decimal strings there (64-bit integers in its protobuf JSON).
import type { Model, ModelRevision, RemoteUpload, RemoteUploadEvent } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { parameterCount, type StoredFile } from './revisions.ts';

/** `parameters` once a revision brought weights (the model is then ready). */
export function catalogueModelWire(m: Model, organizationId: string): Wire<'CatalogueModel'> {
  const total = m.status === 'ready' ? parameterCount(m.architecture!) : 0;
  return {
    id: m.id,
    projectId: m.projectId!,
    organizationId,
    name: m.name,
    description: m.description ?? '',
    weights: {
      type: 'WEIGHTS_TYPE_DEFAULT',
      architecture: m.architecture!,
      ...(m.contextLength !== null && { contextLength: String(m.contextLength) }),
      ...(total > 0 && { parameters: { total: String(total), byDtype: [{ dtype: 'BF16', count: String(total) }] } }),
    },
    baseModelId: m.baseModelId!,
    baseModel: `models/${m.baseModelId}`,
    visibility: m.visibility as Wire<'CatalogueVisibility'>,
  };
}

/** A revision exists only once its upload succeeded, checked against the base architecture when it was created. */
export function revisionWire(r: ModelRevision): Wire<'ModelRevision'> {
  return {
    revisionId: r.id,
    createdAt: iso(r.createdAt),
    validationStatus: 'REVISION_VALIDATION_STATUS_SUCCESS',
    lastValidatedAt: iso(r.createdAt),
    validationErrors: [],
  };
}

export function filesWire(r: ModelRevision | null): Wire<'CatalogueModelFileList'> {
  if (!r) return { object: 'list', data: [], next_cursor: '', totalSizeBytes: '0' };
  const files = JSON.parse(r.files) as StoredFile[];
  return {
    object: 'list',
    data: files.map((f) => ({ path: f.path, sizeBytes: String(f.sizeBytes) })),
    next_cursor: '',
    revisionId: r.id,
    revisionCreatedAt: iso(r.createdAt),
    totalSizeBytes: String(r.totalSizeBytes),
  };
}

export function remoteUploadWire(u: RemoteUpload): Wire<'RemoteUpload'> {
  return {
    id: u.id,
    projectId: u.projectId,
    modelId: u.modelId,
    remoteUrl: u.remoteUrl,
    status: u.status as Wire<'RemoteUploadStatus'>,
    statusMessage: u.statusMessage,
    restartCount: u.restartCount,
    maxRestarts: u.maxRestarts,
    createdAt: iso(u.createdAt),
    updatedAt: iso(u.updatedAt),
  };
}

export function uploadEventWire(v: RemoteUploadEvent): Wire<'RemoteUploadEvent'> {
  return { id: v.id, createdAt: iso(v.createdAt), level: v.level as Wire<'RemoteUploadEvent'>['level'], type: v.type, message: v.message };
}

/** A page of a v2 list: `next_cursor` is "" on the last page. */
export const listWire = <T>(data: T[], next: string | null) => ({ object: 'list' as const, data, next_cursor: next ?? '' });
