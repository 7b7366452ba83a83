// Module `hardware`: what the auth matrix needs (tests only).
import type { Fixtures } from '../types.ts';

export const fixtures: Fixtures<'hardware'> = {
  crossProject: {
    // The platform's hardware, the same for every caller.
    getInferenceInstanceType: async () => ({ params: { instanceTypeId: '1x_nvidia_h100_80gb_sxm' }, shared: true }),
  },
};
