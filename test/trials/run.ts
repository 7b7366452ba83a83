// `npm run trials`: the full durability trials (test/trials/trials.ts) on the database at TEST_DATABASE_URL (a
// fresh database is made on it; SQLite in a temporary folder when unset): KILL_TRIALS kill -9 trials (default 100)
// and, on PostgreSQL, QUEUE_JOBS queue jobs (default 10,000) through two server processes; then the outage campaign
// (test/trials/outage.ts, on a PostgreSQL cluster and a Redis of its own): PostgreSQL stopped OUTAGE_MS (default
// 10 s), then Redis frozen as long, under mixed traffic; then the fault campaign of issue 28 (test/trials/faults.ts):
// hostile schemas, a frozen Redis under chat at 80% of its limit (FREEZE_MS, default 6 s) and images at the limits,
// each with /healthz latency measured beside it; and the package trial (test/trials/package.ts): both tarballs
// installed plainly into an empty project, whose suite then runs. TRIALS (default `kill,queue,outage,faults,package`)
// picks which run. Exits non-zero on any lost or doubled job, on any 500, unanswered request or lost write in the
// campaigns, on a request that waited on the frozen Redis past its timeout, on a 429 at 80% of the limit, and on a
// failure of the installed project's suite.
import { scratchDatabase, usingPostgres } from '../support/database.ts';
import { privatePostgresAvailable } from '../support/private-postgres.ts';
import { imageCase, redisCase, schemaCase } from './faults.ts';
import { outageCampaign } from './outage.ts';
import { packageTrial } from './package.ts';
import { killTrials, queueThroughput } from './trials.ts';

const trials = Number(process.env.KILL_TRIALS ?? 100);
const jobs = Number(process.env.QUEUE_JOBS ?? 10_000);
const outageMs = Number(process.env.OUTAGE_MS ?? 10_000);
const freezeMs = Number(process.env.FREEZE_MS ?? 6_000);
const which = new Set((process.env.TRIALS ?? 'kill,queue,outage,faults,package').split(','));
let failed = false;

if (which.has('kill')) {
  const kill = await scratchDatabase();
  try {
    const r = await killTrials({ databaseUrl: kill.url, trials, log: (line) => console.log(line) });
    console.log(`kill -9 trials: ${JSON.stringify({ ...r, lost: r.lost.length, doubled: r.doubled.length })}`);
    for (const line of [...r.lost, ...r.doubled]) console.log(`  ${line}`);
    failed ||= r.lost.length > 0 || r.doubled.length > 0;
  } finally {
    await kill.drop();
  }
}

if (!which.has('queue')) {
  // not asked for
} else if (usingPostgres) {
  const two = await scratchDatabase();
  try {
    const r = await queueThroughput({ databaseUrl: two.url, processes: 2, jobs });
    console.log(`two processes, ${jobs} queue jobs: ${JSON.stringify(r)}`);
    failed ||= r.doubleClaims > 0 || r.lost > 0;
  } finally {
    await two.drop();
  }
} else console.log('two-process queue trial: PostgreSQL only (set TEST_DATABASE_URL)');

if (!which.has('outage')) {
  // not asked for
} else if (privatePostgresAvailable) {
  const r = await outageCampaign({ postgresDownMs: outageMs, redisFrozenMs: outageMs, steadyMs: 5000, log: (line) => console.log(line) });
  for (const [phase, f] of Object.entries(r.phases))
    console.log(`  ${phase}: ${f.requests} requests, statuses ${JSON.stringify(f.statuses)}, slowest ${f.slowestMs} ms`);
  const { phases: _, ...figures } = r;
  console.log(`outage campaign: ${JSON.stringify(figures)}`);
  if (!r.redis) console.log('  (no redis-server installed: the Redis freeze was left out)');
  failed ||= r.errors500 > 0 || r.hung > 0 || r.lost > 0 || r.givenUp > 0 || r.unvalidated > 0 || r.postgresRecoveryMs === null;
} else console.log("outage campaign: needs PostgreSQL's server binaries (/usr/lib/postgresql/<version>/bin, or PG_BIN)");

if (which.has('faults')) {
  const show = (name: string, f: Awaited<ReturnType<typeof imageCase>>) => {
    console.log(`${name}: /healthz beside it ${JSON.stringify(f.healthz)} (ms)`);
    for (const [kind, r] of Object.entries(f.requests)) console.log(`  ${kind}: statuses ${JSON.stringify(r.statuses)}, ms ${JSON.stringify(r.ms)}`);
    const bad = Object.values(f.requests).some((r) => Object.keys(r.statuses).some((s) => s === '0' || s.startsWith('5')));
    if (f.healthz.max > 100) console.log(`  /healthz took over 100 ms at least once (slowest ${f.healthz.max} ms): see the machine's load`);
    return bad;
  };
  const schemas = await schemaCase();
  failed = show('case 1a, schemas past the bounds in 9 MB bodies (enum, required of 900,000; two at once)', schemas.large) || failed;
  failed = show('case 1b, large schemas within the bounds (900 properties, 1,000 objects; six at once)', schemas.within) || failed;
  const redis = await redisCase({ frozenMs: freezeMs });
  if (redis) {
    failed = show(`case 2, Redis frozen ${freezeMs} ms under chat at 80% of its limit`, redis) || failed;
    for (const [phase, p] of Object.entries(redis.phases))
      console.log(`  ${phase}: ${p.requests} requests, ${p.refused} refused (429), slowest ${p.slowestMs} ms`);
    // Waiting on Redis at most its timeout; the rest of a request's time is the request's own (a few ms).
    const overWait = redis.phases.frozen.slowestMs > redis.timeoutMs + 250;
    const refused = Object.values(redis.phases).reduce((n, p) => n + p.refused, 0);
    if (overWait) console.log(`  a request waited ${redis.phases.frozen.slowestMs} ms, past the ${redis.timeoutMs} ms timeout`);
    failed ||= overWait || refused > 0;
  } else console.log('case 2: no redis-server installed: left out');
  failed = show('case 4, images at the limits (4 x 2048x2048, n 4, at once; then one alone)', await imageCase()) || failed;
}
if (which.has('package')) {
  const r = await packageTrial((line) => console.log(line));
  console.log(`package trial: ${JSON.stringify({ ...r, failures: r.failures.length })}`);
  for (const line of r.failures) console.log(`  ${line}`);
  failed ||= r.failures.length > 0 || r.passed === 0;
}

console.log(failed ? 'TRIALS FAILED' : 'trials passed');
process.exit(failed ? 1 : 0);
