// A short outage campaign on PostgreSQL (`npm run trials` runs the long one; test/trials/outage.ts says what it
// checks): PostgreSQL stopped 2 s, then Redis frozen 2 s, under mixed traffic: no 500, every request answered, no
// acknowledged write lost. On a private PostgreSQL cluster the test starts and stops (test/support/private-postgres.ts).
import { expect, test } from 'vitest';
import { usingPostgres } from './support/database.ts';
import { privatePostgresAvailable } from './support/private-postgres.ts';
import { outageCampaign } from './trials/outage.ts';

test.skipIf(!usingPostgres || !privatePostgresAvailable)(
  'an outage campaign: PostgreSQL stopped, then Redis frozen, under traffic: 503s, no 500, nothing unanswered, nothing acknowledged lost, served again once back',
  { timeout: 120_000 },
  async () => {
    const r = await outageCampaign({ postgresDownMs: 2000, redisFrozenMs: 2000, steadyMs: 1500, concurrency: 4 });
    expect(r).toMatchObject({ errors500: 0, hung: 0, lost: 0, givenUp: 0, unvalidated: 0 });
    expect(r.acknowledgedWrites).toBeGreaterThan(0);
    // A request begun while PostgreSQL was down answered 503 (or, from the key cache, 200): never anything else.
    expect(Object.keys(r.phases['postgres down']!.statuses).filter((s) => s !== '503' && s !== '200')).toEqual([]);
    expect(r.phases['postgres down']!.statuses['503'], JSON.stringify(r.phases)).toBeGreaterThan(0);
    expect(r.postgresRecoveryMs).not.toBeNull();
  },
);
