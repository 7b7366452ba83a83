// Module `models`: what the auth matrix needs (tests only).
import type { Fixtures } from '../types.ts';

let n = 0;

export const fixtures: Fixtures<'models'> = {
  crossProject: {
    // The owner's upload job: any status is readable by its own project only.
    getJob: async ({ owner }) => {
      const { data } = await owner.api.POST('/v1/models', { body: { model_name: `fixture-${++n}`, model_source: 'acme/Meta-Llama-3.1-8B-Instruct-fixture' } });
      return { params: { jobId: data!.data.job_id } };
    },
  },
};
