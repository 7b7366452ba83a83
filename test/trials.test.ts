// A fast sample of the durability trials (`npm run trials` runs the full counts; test/trials/trials.ts says what
// each checks): a few kill -9 trials mid-job with a job of every runner kind (fine-tunes, evaluations and file
// validations among them), on the test database; and, on PostgreSQL, a few hundred queue jobs through two server
// processes with no double claim and no loss; and, on PostgreSQL, a short outage campaign (PostgreSQL stopped 2 s,
// Redis frozen 2 s, under mixed traffic: no 500, every request answered, no acknowledged write lost).
import { describe, expect, test } from 'vitest';
import { scratchDatabase, usingPostgres } from './support/database.ts';
import { privatePostgresAvailable } from './support/private-postgres.ts';
import { outageCampaign } from './trials/outage.ts';
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

  test.skipIf(!usingPostgres || !privatePostgresAvailable)(
    'an outage campaign: PostgreSQL stopped, then Redis frozen, under traffic: 503s, no 500, nothing unanswered, nothing acknowledged lost, served again once back',
    { timeout: 120_000 },
    async () => {
      const r = await outageCampaign({ postgresDownMs: 2000, redisFrozenMs: 2000, steadyMs: 1500, concurrency: 4 });
      expect(r).toMatchObject({ errors500: 0, hung: 0, lost: 0, givenUp: 0, unvalidated: 0 });
      expect(r.acknowledgedWrites).toBeGreaterThan(0);
      // A request begun while PostgreSQL was down answered 503 (or, from the key cache, 200): never anything else.
      expect(Object.keys(r.phases['postgres down']!.statuses).filter((s) => s !== '503' && s !== '200')).toEqual([]);
      expect(r.phases['postgres down']!.statuses['503']).toBeGreaterThan(0);
      expect(r.postgresRecoveryMs).not.toBeNull();
    },
  );
});
