// Queue throughput for `npm run bench` (scenario name "queue throughput"): jobs submitted, claimed and completed
// through the worker API (submit -> claim -> complete, test/trials/trials.ts `queueThroughput`) by one server
// process, then by two on the same PostgreSQL database, in alternating rounds (each on a fresh database), so that
// whatever else the machine does weighs on both alike. Goal: two processes >= 1.7x one. PostgreSQL only
// (TEST_DATABASE_URL); BENCH_QUEUE_JOBS jobs per round (default 2000).
import { scratchDatabase, usingPostgres } from '../support/database.ts';
import { queueThroughput } from '../trials/trials.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function queueBench(rounds: number): Promise<boolean> {
  if (!usingPostgres) {
    console.log('RESULT queue throughput: skipped (PostgreSQL only: set TEST_DATABASE_URL)');
    return true;
  }
  const jobs = Number(process.env.BENCH_QUEUE_JOBS ?? 2000);
  const rates: Record<number, number[]> = { 1: [], 2: [] };
  for (let round = 1; round <= rounds; round++) {
    for (const processes of [1, 2]) {
      const scratch = await scratchDatabase('postgresql');
      try {
        const r = await queueThroughput({ databaseUrl: scratch.url, processes, jobs });
        if (r.doubleClaims || r.lost) throw new Error(`queue throughput: ${JSON.stringify(r)}`);
        rates[processes]!.push(r.jobsPerSecond);
        console.log(`queue throughput round ${round}: ${processes} process(es), ${jobs} jobs in ${r.ms} ms: ${r.jobsPerSecond} jobs/s (submit -> claim -> complete), ${r.serverCpuMsPerJob} ms of server CPU per job`);
      } finally {
        await scratch.drop();
      }
    }
  }
  const one = median(rates[1]!);
  const two = median(rates[2]!);
  const ok = two >= 1.7 * one;
  console.log(`RESULT queue throughput: one process ${one} jobs/s, two processes ${two} jobs/s, ratio ${(two / one).toFixed(2)}  target ratio >= 1.7: ${ok ? 'met' : 'MISSED'}`);
  return ok;
}
