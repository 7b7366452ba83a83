// Module `dedicated`: the models deployable on dedicated hardware (supported.ts decides which, with their
// profiles), and the products each is offered on.
import { notFound } from '../../../core/errors.ts';
import { listPage } from '../../../http/list.ts';
import { fineTunable } from '../../fine-tuning/index.ts';
import { canonicalModelId } from '../../models/index.ts';
import type { Context, Wire } from '../../types.ts';
import { type Supported, supportedModels } from '../supported.ts';
import { kindOf, listWire, supportedModelWire } from '../wire.ts';

type Product = Wire<'SupportedModel'>['products'][number];

/** Where the model is offered here: always dedicated; serverless when the pool serves it; fine-tuning when a job takes it. */
function productsOf({ model }: Supported): Product[] {
  return [...(model.serverless ? ['PRODUCT_SERVERLESS' as const] : []), 'PRODUCT_DEDICATED', ...(fineTunable(model) ? ['PRODUCT_FINE_TUNING' as const] : [])];
}

export async function listSupportedModels(ctx: Context<'listSupportedModels'>) {
  const { modality, product, search, limit, after } = ctx.query;
  const needle = search?.toLowerCase();
  const kept = (await supportedModels(ctx.db.prisma)).filter(
    (s) =>
      (product === undefined || productsOf(s).includes(product)) &&
      (modality === undefined || [...kindOf(s.model).input, ...kindOf(s.model).output].includes(modality)) &&
      (needle === undefined || [s.model.id, s.model.displayName, s.model.organization, s.model.architecture].some((v) => v?.toLowerCase().includes(needle))),
  );
  const p = listPage(kept, { size: limit, cursor: after }, { fields: {}, params: { size: 'limit', cursor: 'after' } });
  return listWire(
    p.rows.map((s) => supportedModelWire(s, productsOf(s))),
    p.next,
  );
}

export async function getSupportedModel(ctx: Context<'getSupportedModel'>) {
  const id = canonicalModelId(ctx.params.modelId);
  const s = (await supportedModels(ctx.db.prisma)).find((x) => x.id === id);
  if (!s) throw notFound('supported model', ctx.params.modelId, 'modelId');
  return supportedModelWire(s, productsOf(s));
}
