// Module `secrets`: what the auth matrix needs (tests only).
import type { FixtureKit, Fixtures } from '../types.ts';

let n = 0;

async function ownersSecret({ owner }: FixtureKit) {
  const { data } = await owner.api.POST('/v1/deployments/secrets', { body: { name: `FIXTURE_SECRET_${++n}`, value: 'fixture-value' } });
  return data!.id;
}

export const fixtures: Fixtures<'secrets'> = {
  crossProject: {
    getSecret: async (kit) => ({ params: { id: await ownersSecret(kit) } }),
    updateSecret: async (kit) => ({ params: { id: await ownersSecret(kit) }, body: { description: 'changed' } }),
    deleteSecret: async (kit) => ({ params: { id: await ownersSecret(kit) } }),
  },
};
