// Rows the dedicated-endpoint tests need that no public operation creates: v1 endpoints (their creation is retired;
// made as the seed makes them) and uploaded models in a given state (uploads normally arrive through POST /v1/models
// and the runner). Durations come from the machines' declarations.
import { deploymentMachine } from '../../server/modules/dedicated/machine.ts';
import { createV1Endpoint } from '../../server/modules/endpoints/rows.ts';
import { createUploadedModel } from '../../server/modules/models/catalogue.ts';
import type { TestPlatform } from './platform.ts';

/** The seeded v2 fixtures most dedicated-endpoint tests deploy, and the default durations of the deployment steps. */
export const PROVISION_MS = deploymentMachine.timed!.DEPLOYMENT_STATE_PROVISIONING!.defaultMs;
export const STOP_MS = deploymentMachine.timed!.DEPLOYMENT_STATE_STOPPING!.defaultMs;
export const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';
export const H100 = 'cr_llama_3_1_8b_h100';
export const L40S = 'cr_llama_3_1_8b_l40s';

let n = 0;

/**
 * The default project's two seeded v1 endpoints (server/modules/endpoints/seed.json), as rows: the running Llama one
 * and the stopped Qwen one. Their names are made at seeding (`<model name>-<6 hex characters>`), so they are found
 * by their display names.
 */
export async function seededV1Endpoints(t: TestPlatform) {
  const rows = await t.services.db.prisma.v1Endpoint.findMany({ where: { projectId: t.caller.identity.projectId } });
  const by = (displayName: string) => rows.find((r) => r.displayName === displayName)!;
  return { running: by('Llama 3.1 8B Instruct (v1)'), stopped: by('Qwen 2.5 7B Instruct (v1)') };
}

export async function insertV1Endpoint(
  t: TestPlatform,
  projectId: string,
  over: { name?: string; model?: string; hardware?: string; state?: string; minReplicas?: number; maxReplicas?: number } = {},
) {
  return t.services.db.write((tx) =>
    createV1Endpoint(tx, t.clock, projectId, {
      name: over.name, // absent: named `<model>-<hash>` as the platform names v1 endpoints
      displayName: 'Test endpoint',
      model: over.model ?? MODEL,
      hardware: over.hardware ?? '1x_nvidia_h100_80gb_sxm',
      minReplicas: over.minReplicas ?? 1,
      maxReplicas: over.maxReplicas ?? 1,
      state: (over.state ?? 'STARTED') as 'STARTED',
      inactiveTimeout: null,
    }),
  );
}

/** An uploaded model or adapter of `projectId`, as a completed (or other `status`) upload leaves it. */
export async function insertUpload(
  t: TestPlatform,
  projectId: string,
  over: { name?: string; modelType?: 'model' | 'adapter'; base?: string; architecture?: string | null; status?: string; minGpuMemory?: number | null } = {},
) {
  const adapter = over.modelType === 'adapter';
  return t.services.db.write((tx) =>
    createUploadedModel(tx, t.clock, projectId, {
      name: over.name ?? `upload-${++n}`,
      type: 'chat',
      modelType: over.modelType ?? 'model',
      architecture: over.architecture === undefined ? 'llama-3.1-8b' : over.architecture,
      baseModelId: over.base ?? MODEL,
      minGpuMemory: over.minGpuMemory === undefined ? (adapter ? null : 24) : over.minGpuMemory,
      status: (over.status ?? 'ready') as 'ready',
      source: 'acme/fine-tuned',
      sourceKind: 'huggingface',
    }),
  );
}
