// The registry: one line per module (one module per spec tag file). Order matters for seeds only: a module's seed
// may refer to rows an earlier one seeded (the catalogue before the endpoints that serve it). The control plane's
// module (Control tag) is not here: it is a guest the platform plugs in when CONTROL_API is on (platform.ts), and no
// module imports it.
import type { ModuleName } from '../../generated/operations.ts';
import type { Served } from '../http/context.ts';
import { adapters } from './adapters/index.ts';
import { audio } from './audio/index.ts';
import { batches } from './batches/index.ts';
import { codeInterpreter } from './code-interpreter/index.ts';
import { compute } from './compute/index.ts';
import { containers } from './containers/index.ts';
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
import type { AnyModule } from './types.ts';
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
  codeInterpreter,
  rl,
] as const;

// Every module of the spec is listed (but the guest's): a tag file without its line here fails `tsc`.
type Listed = (typeof modules)[number]['name'];
const complete: [Exclude<ModuleName, Listed | 'control'>] extends [never] ? true : never = true;
void complete;

/** What the pipeline serves of `served` modules: every handler, upload rule and signed check, by operationId. */
export function servedBy(served: readonly AnyModule[]): Served {
  return {
    handlers: Object.fromEntries(served.flatMap((m) => Object.entries(m.handlers))),
    uploads: Object.assign({}, ...served.map((m) => m.uploads ?? {})),
    signed: Object.assign({}, ...served.map((m) => m.signed ?? {})),
  };
}
