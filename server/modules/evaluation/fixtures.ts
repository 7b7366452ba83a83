// Module `evaluation`: what the auth matrix needs (tests only).
import { storeFile } from '../files/store.ts';
import type { FixtureKit, Fixtures } from '../types.ts';

const ownersJob = async ({ owner, services }: FixtureKit) => {
  const file = await storeFile(
    services,
    { projectId: owner.projectId, filename: 'fixture.jsonl', purpose: 'eval', fileType: 'jsonl' },
    '{"response": "yes"}\n',
  );
  const { data, error } = await owner.api.POST('/v1/evaluation', {
    body: {
      type: 'classify',
      parameters: {
        judge: { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', model_source: 'serverless', system_template: 'Judge.' },
        labels: ['yes', 'no'],
        pass_labels: ['yes'],
        model_to_evaluate: 'response',
        input_data_file_path: file.id,
      },
    },
  });
  if (!data) throw new Error(`fixture evaluation not created: ${JSON.stringify(error)}`);
  return data.workflow_id;
};

export const fixtures: Fixtures<'evaluation'> = {
  crossProject: {
    getEvaluationJobDetails: async (kit) => ({ params: { id: await ownersJob(kit) } }),
    getEvaluationJobStatusAndResults: async (kit) => ({ params: { id: await ownersJob(kit) } }),
  },
};
