// `npm run trials`: the full durability trials (test/trials/trials.ts) on the database at TEST_DATABASE_URL (a
// fresh database is made on it; SQLite in a temporary folder when unset): KILL_TRIALS kill -9 trials (default 100)
// and, on PostgreSQL, QUEUE_JOBS queue jobs (default 10,000) through two server processes. Exits non-zero on any
// lost or doubled job.
import { scratchDatabase } from '../support/database.ts';
import { killTrials, queueThroughput } from './trials.ts';

const trials = Number(process.env.KILL_TRIALS ?? 100);
const jobs = Number(process.env.QUEUE_JOBS ?? 10_000);
let failed = false;

const kill = await scratchDatabase();
try {
  const r = await killTrials({ databaseUrl: kill.url, trials, log: (line) => console.log(line) });
  console.log(`kill -9 trials: ${JSON.stringify({ ...r, lost: r.lost.length, doubled: r.doubled.length })}`);
  for (const line of [...r.lost, ...r.doubled]) console.log(`  ${line}`);
  failed ||= r.lost.length > 0 || r.doubled.length > 0;
} finally {
  await kill.drop();
}

if (kill.url.startsWith('postgres')) {
  const two = await scratchDatabase();
  try {
    const r = await queueThroughput({ databaseUrl: two.url, processes: 2, jobs });
    console.log(`two processes, ${jobs} queue jobs: ${JSON.stringify(r)}`);
    failed ||= r.doubleClaims > 0 || r.lost > 0;
  } finally {
    await two.drop();
  }
} else console.log('two-process queue trial: PostgreSQL only (set TEST_DATABASE_URL)');

console.log(failed ? 'TRIALS FAILED' : 'trials passed');
process.exit(failed ? 1 : 0);
