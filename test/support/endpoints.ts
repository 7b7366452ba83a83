// Rows the dedicated-endpoint tests need that no public operation creates: v1 endpoints (their creation is retired)
// and uploaded models in a given state (uploads normally arrive through POST /v1/models and the runner).
import { randomUUID } from 'node:crypto';
import { newId } from '../../server/ids.ts';
import { reserve } from '../../server/capacity.ts';
import type { TestPlatform } from './platform.ts';

/** The seeded v2 fixtures most dedicated-endpoint tests deploy, and the default durations of the deployment steps. */
export const PROVISION_MS = 60_000;
export const STOP_MS = 10_000;
export const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';
export const H100 = 'cr_llama_3_1_8b_h100';
export const L40S = 'cr_llama_3_1_8b_l40s';

let n = 0;

export async function insertV1Endpoint(
  t: TestPlatform,
  projectId: string,
  over: { name?: string; model?: string; hardware?: string; state?: string; minReplicas?: number; maxReplicas?: number } = {},
) {
  const now = new Date(t.clock.now());
  const state = over.state ?? 'STARTED';
  return t.services.db.write(async (tx) => {
    const e = await tx.v1Endpoint.create({
      data: {
        id: `endpoint-${randomUUID()}`,
        projectId,
        name: over.name ?? `v1-test-${++n}`,
        displayName: 'Test endpoint',
        modelId: over.model ?? 'meta-llama/Meta-Llama-3.1-8B-Instruct',
        hardwareId: over.hardware ?? '1x_nvidia_h100_80gb_sxm',
        minReplicas: over.minReplicas ?? 1,
        maxReplicas: over.maxReplicas ?? 1,
        state,
        inactiveTimeout: null,
        createdAt: now,
        updatedAt: now,
      },
    });
    if (state === 'STARTED') {
      await reserve(tx, t.clock, { projectId, hardwareId: e.hardwareId, replicas: Math.max(e.minReplicas, 1), ownerKind: 'v1_endpoint', ownerId: e.id });
    }
    return e;
  });
}

/** An uploaded model or adapter of `projectId`, as a completed (or other `status`) upload leaves it. */
export async function insertUpload(
  t: TestPlatform,
  projectId: string,
  over: { name?: string; modelType?: 'model' | 'adapter'; base?: string; architecture?: string | null; status?: string; minGpuMemory?: number | null } = {},
) {
  const adapter = over.modelType === 'adapter';
  return t.services.db.write((tx) =>
    tx.model.create({
      data: {
        id: newId('ml', t.clock.now()),
        projectId,
        name: over.name ?? `upload-${++n}`,
        type: 'chat',
        modelType: over.modelType ?? 'model',
        architecture: over.architecture === undefined ? 'llama-3.1-8b' : over.architecture,
        baseModelId: over.base ?? 'meta-llama/Meta-Llama-3.1-8B-Instruct',
        minGpuMemory: over.minGpuMemory === undefined ? (adapter ? null : 24) : over.minGpuMemory,
        status: over.status ?? 'ready',
        source: 'acme/fine-tuned',
        created: BigInt(Math.floor(t.clock.now() / 1000)),
      },
    }),
  );
}
