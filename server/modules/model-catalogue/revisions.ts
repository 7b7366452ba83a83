// Revisions: what a succeeded upload brought. Offline nothing is fetched, so a resolving source brings the standard
// layout of a checkpoint of its model's architecture in bf16 (the tag's **Uploads**): a few small metadata files
// and safetensors shards of at most 5 GB holding the architecture's parameter count times two bytes.
import type { Model, ModelRevision, RemoteUpload } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';

/** Nominal parameter counts of the served base architectures (their model cards'); others are read from the name (`-8b`). */
const PARAMETERS: Record<string, number> = {
  'llama-3.1-8b': 8_030_261_248,
  'llama-3.3-70b': 70_553_706_496,
  'llama-2-7b': 6_738_415_616,
  'llama-2-70b': 68_976_648_192,
  'qwen2.5-7b': 7_615_616_512,
  'qwen2.5-72b': 72_706_203_648,
  'qwen3.5-9b': 9_000_000_000,
  'mistral-7b': 7_241_732_096,
  'mixtral-8x7b': 46_702_792_704,
  'deepseek-v3': 671_026_419_200,
  'gpt-oss-120b': 116_829_156_672,
};

export function parameterCount(architecture: string): number {
  const known = PARAMETERS[architecture];
  if (known !== undefined) return known;
  const billions = /(\d+(?:\.\d+)?)b(?![a-z])/.exec(architecture);
  return billions ? Math.round(Number(billions[1]) * 1e9) : 0;
}

export interface StoredFile {
  path: string;
  sizeBytes: number;
}

const SHARD_BYTES = 5_000_000_000;
const METADATA: StoredFile[] = [
  { path: 'config.json', sizeBytes: 855 },
  { path: 'generation_config.json', sizeBytes: 184 },
  { path: 'special_tokens_map.json', sizeBytes: 296 },
  { path: 'tokenizer.json', sizeBytes: 9_085_657 },
  { path: 'tokenizer_config.json', sizeBytes: 55_351 },
];

/** The files a checkpoint of `architecture` in bf16 consists of, in path order. */
export function checkpointFiles(architecture: string): StoredFile[] {
  const weightBytes = parameterCount(architecture) * 2;
  const shards = Math.max(1, Math.ceil(weightBytes / SHARD_BYTES));
  const pad = (n: number) => String(n).padStart(5, '0');
  const files = [...METADATA, { path: 'model.safetensors.index.json', sizeBytes: 23_950 + 60 * shards }];
  for (let i = 1; i <= shards; i++) {
    const size = i < shards ? SHARD_BYTES : weightBytes - SHARD_BYTES * (shards - 1);
    files.push({ path: `model-${pad(i)}-of-${pad(shards)}.safetensors`, sizeBytes: size });
  }
  return files.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** Adds the revision a succeeded upload brings, and makes its model ready (deployable). */
export async function addRevision(tx: Tx, clock: Clock, u: RemoteUpload): Promise<ModelRevision> {
  const model = await tx.model.findUniqueOrThrow({ where: { id: u.modelId } });
  const files = checkpointFiles(model.architecture ?? '');
  const revision = await tx.modelRevision.create({
    data: {
      id: newId('rev', clock.now()),
      projectId: u.projectId,
      modelId: u.modelId,
      uploadId: u.id,
      files: JSON.stringify(files),
      totalSizeBytes: BigInt(files.reduce((sum, f) => sum + f.sizeBytes, 0)),
      createdAt: instant(clock),
    },
  });
  if (model.status !== 'ready') await tx.model.update({ where: { id: model.id }, data: { status: 'ready' } });
  return revision;
}

/** A model's revisions, oldest first (the last is its current one). */
export const revisionsOf = (db: Db | Tx, modelId: string) => db.modelRevision.findMany({ where: { modelId }, orderBy: { id: 'asc' } });

/** Whether a model is in the v2 catalogue (rather than the platform's, a v1 upload or a fine-tuned output). */
export const isCatalogueModel = (m: Model) => m.visibility !== null;

/**
 * The revision a deployment of `model` pins: the named one (which must be one of its revisions), else its newest.
 * null for a v2 model without revisions, or when the named one is not its.
 */
export async function catalogueRevision(db: Db | Tx, model: Model, named?: string): Promise<string | null> {
  if (named !== undefined) return (await db.modelRevision.findFirst({ where: { id: named, modelId: model.id } }))?.id ?? null;
  return (await db.modelRevision.findFirst({ where: { modelId: model.id }, orderBy: { id: 'desc' } }))?.id ?? null;
}
