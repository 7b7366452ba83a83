// Module `files`: what the auth matrix needs (tests only).
import type { FixtureKit, Fixtures } from '../types.ts';
import { storeFile } from './store.ts';

const ownersFile = async ({ owner, services }: FixtureKit) =>
  (await storeFile(services, { projectId: owner.projectId, filename: 'fixture.jsonl', purpose: 'eval', fileType: 'jsonl' }, '{"text": "a fixture"}\n')).id;

export const fixtures: Fixtures<'files'> = {
  crossProject: {
    retrieveFile: async (kit) => ({ params: { id: await ownersFile(kit) } }),
    deleteFile: async (kit) => ({ params: { id: await ownersFile(kit) } }),
    getFileContent: async (kit) => ({ params: { id: await ownersFile(kit) } }),
  },
};
