// Module `endpoints` (spec/tags/endpoints.yaml): the retired first-generation (v1) dedicated endpoints, their one
// state machine (machine.ts), their rows (rows.ts) and per-minute usage.
import type { ModuleDescriptor, SeedContext } from '../types.ts';
import { createEndpoint, deleteEndpoint, getEndpoint, getEndpointUsage, listEndpoints, updateEndpoint } from './handlers.ts';
import { v1EndpointMachine } from './machine.ts';
import { createV1Endpoint, type V1EndpointSpec, v1EndpointsSection } from './rows.ts';
import data from './seed.json' with { type: 'json' };

export { findV1Endpoint } from './rows.ts';
export { qualifiedName } from './wire.ts';

/** The default project's v1 endpoints (seed.json); one whose model or hardware the catalogue lacks is left out. */
async function seed({ tx, clock, projectId }: SeedContext): Promise<void> {
  for (const e of data.v1Endpoints as V1EndpointSpec[]) {
    const [model, hardware] = await Promise.all([tx.model.findUnique({ where: { id: e.model } }), tx.hardware.findUnique({ where: { id: e.hardware } })]);
    if (model && hardware) await createV1Endpoint(tx, clock, projectId, e);
  }
}

export const endpoints: ModuleDescriptor<'endpoints'> = {
  name: 'endpoints',
  handlers: { listEndpoints, createEndpoint, getEndpoint, updateEndpoint, deleteEndpoint, getEndpointUsage },
  seed,
  machines: [v1EndpointMachine],
  fixtureSections: { v1_endpoints: v1EndpointsSection },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
