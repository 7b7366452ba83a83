// The registry: one line per module (one module per spec tag file). Order matters for seeds only: a module's seed
// may refer to rows an earlier one seeded (the catalogue before the endpoints that serve it).
import type { ModuleName, OperationId } from '../../generated/operations.ts';
import type { UploadRule } from '../http/multipart.ts';
import { adapters } from './adapters/index.ts';
import { audio } from './audio/index.ts';
import { batches } from './batches/index.ts';
import { compute } from './compute/index.ts';
import { containers } from './containers/index.ts';
import { control } from './control/index.ts';
import { dedicated } from './dedicated/index.ts';
import { embeddings } from './embeddings/index.ts';
import { endpoints } from './endpoints/index.ts';
import { evaluation } from './evaluation/index.ts';
import { experiments } from './experiments/index.ts';
import { files } from './files/index.ts';
import { fineTuning } from './fine-tuning/index.ts';
import { hardware } from './hardware/index.ts';
import { identity } from './identity/index.ts';
import { images } from './images/index.ts';
import { inference } from './inference/index.ts';
import { modelCatalogue } from './model-catalogue/index.ts';
import { models } from './models/index.ts';
import { queue } from './queue/index.ts';
import { rerank } from './rerank/index.ts';
import { rl } from './rl/index.ts';
import { rollouts } from './rollouts/index.ts';
import { secrets } from './secrets/index.ts';
import type { SignedCheck, UploadContext } from './types.ts';
import { videos } from './videos/index.ts';
import { volumes } from './volumes/index.ts';

export const modules = [
  identity,
  hardware,
  models,
  modelCatalogue,
  compute,
  volumes,
  secrets,
  containers,
  endpoints,
  adapters,
  dedicated,
  rollouts,
  experiments,
  inference,
  embeddings,
  rerank,
  audio,
  images,
  videos,
  files,
  fineTuning,
  evaluation,
  batches,
  queue,
  rl,
  control,
] as const;

// Every module of the spec is listed: a tag file without its line here fails `tsc`.
type Listed = (typeof modules)[number]['name'];
const complete: [Exclude<ModuleName, Listed>] extends [never] ? true : never = true;
void complete;

/** Every operation's handler, by operationId. */
export const handlers: Record<string, (ctx: never) => Promise<unknown>> = Object.fromEntries(modules.flatMap((m) => Object.entries(m.handlers)));

/** Upload rules of the operations that take a multipart file, by operationId. */
export const uploads: Partial<Record<OperationId, UploadRule<UploadContext>>> = Object.assign(
  {},
  ...modules.map((m) => ('uploads' in m ? m.uploads : undefined) ?? {}),
);

/** The checks of the operations authorised by a signed URL instead of a key, by operationId. */
export const signed: Partial<Record<OperationId, SignedCheck>> = Object.assign({}, ...modules.map((m) => ('signed' in m ? m.signed : undefined) ?? {}));
