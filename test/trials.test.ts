// A fast sample of the durability trials (`npm run trials` runs the full counts; test/trials/trials.ts says what
// each checks): a few kill -9 trials mid-job with a job of every runner kind (fine-tunes, evaluations and file
// validations among them), on the test database; and, on PostgreSQL, a few hundred queue jobs through two server
// processes with no double claim and no loss. (The short outage campaign is test/outage-campaign.test.ts, a file of
// its own so that the two run side by side.)
import { describe, expect, test } from 'vitest';
import { scratchDatabase, usingPostgres } from './support/database.ts';
import { killTrials, queueThroughput } from './trials/trials.ts';

describe('durability (sample)', () => {
  test('kill -9 in the middle of jobs of every kind: after each restart every job finishes, none twice', { timeout: 300_000 }, async () => {
    const scratch = await scratchDatabase();
    try {
      // Two trials of eight jobs each: .ci/run runs four more on PostgreSQL, `npm run trials` a hundred.
      const r = await killTrials({ databaseUrl: scratch.url, trials: 2 });
      expect(r.jobs).toEqual({
        queue: 2,
        videos: 2,
        uploads: 2,
        remediations: 2,
        deployments: 2,
        fineTunes: 2,
        evaluations: 2,
        files: 2,
        rollouts: 2,
        batches: 2,
      });
      expect(r.killsMidWork).toBeGreaterThan(0);
      expect(r.rolloutsKilledRunning).toBeGreaterThan(0);
      expect(r.lost).toEqual([]);
      expect(r.doubled).toEqual([]);
    } finally {
      await scratch.drop();
    }
  });

  test.skipIf(!usingPostgres)('two server processes on PostgreSQL work one queue: every job claimed once and done', { timeout: 300_000 }, async () => {
    const scratch = await scratchDatabase('postgresql');
    try {
      const r = await queueThroughput({ databaseUrl: scratch.url, processes: 2, jobs: 300 });
      expect(r).toMatchObject({ jobs: 300, claims: 300, doubleClaims: 0, lost: 0 });
    } finally {
      await scratch.drop();
    }
  });
});
