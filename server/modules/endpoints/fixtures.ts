// Module `endpoints`: what the auth matrix needs (tests only). v1 endpoints cannot be created through the API
// (retired), so the owner's endpoint is created as the seed creates them.
import type { FixtureKit, Fixtures } from '../types.ts';
import { createV1Endpoint } from './rows.ts';

export const ownersV1Endpoint = ({ services, owner }: FixtureKit) =>
  services.db.write((tx) =>
    createV1Endpoint(tx, services.clock, owner.projectId, {
      displayName: 'Fixture endpoint',
      model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
      hardware: '1x_nvidia_h100_80gb_sxm',
      minReplicas: 1,
      maxReplicas: 1,
      state: 'STARTED',
      inactiveTimeout: null,
    }),
  );

const v1 = async (kit: FixtureKit) => ({ params: { endpointId: (await ownersV1Endpoint(kit)).id } });

export const fixtures: Fixtures<'endpoints'> = {
  crossProject: {
    getEndpoint: v1,
    getEndpointUsage: v1,
    deleteEndpoint: v1,
    updateEndpoint: async (kit) => ({ ...(await v1(kit)), body: { display_name: 'renamed' } }),
  },
};
