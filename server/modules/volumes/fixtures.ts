// Module `volumes`: what the auth matrix needs (tests only).
import type { FixtureKit, Fixtures } from '../types.ts';

let n = 0;

async function ownersVolume({ owner }: FixtureKit) {
  const { data } = await owner.api.POST('/v1/deployments/storage/volumes', {
    body: { name: `fixture-volume-${++n}`, type: 'readOnly', content: { type: 'files', source_prefix: 's3://fixture/weights/' } },
  });
  return data!.id;
}

export const fixtures: Fixtures<'volumes'> = {
  crossProject: {
    getVolume: async (kit) => ({ params: { id: await ownersVolume(kit) } }),
    updateVolume: async (kit) => ({ params: { id: await ownersVolume(kit) }, body: { content: { source_prefix: 's3://fixture/v2/' } } }),
    deleteVolume: async (kit) => ({ params: { id: await ownersVolume(kit) } }),
  },
};
