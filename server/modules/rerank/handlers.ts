// Module `rerank`: parse -> the model (a serverless rerank model) -> the documents' texts and the limits -> the
// engine -> the wire.
import { newId } from '../../core/ids.ts';
import { rerankEngineFor } from '../../engines/rerank.ts';
import { serverlessModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { acceptRerank } from './rules.ts';
import { rerankWire } from './wire.ts';

export async function rerank({ db, clock, engines, identity, body }: Context<'rerank'>) {
  const model = await serverlessModel(db.prisma, identity.projectId, body.model, 'rerank');
  const accepted = acceptRerank(body, model.contextLength);
  const result = await rerankEngineFor(engines, model.id).rerank({ model: model.id, query: body.query, documents: accepted.texts, topN: accepted.topN });
  return rerankWire(newId('rerank', clock.now()), model.id, result, body.return_documents ? body.documents : null);
}
