// Queue throughput for `npm run bench` (scenario name "queue throughput"): jobs submitted, claimed and completed
// through the worker API (submit -> claim -> complete, test/trials/trials.ts `queueThroughput`) by one server
// process, then by two on the same PostgreSQL database, in alternating rounds (each on a fresh database), so that
// whatever else the machine does weighs on both alike. PostgreSQL only (TEST_DATABASE_URL); BENCH_QUEUE_JOBS jobs
// per run (default 2000).
//
// Goal: two processes >= 1.8x one. Measured twice:
// - uncapped, as information: on this 2-core machine one server process already takes a whole core, and PostgreSQL
//   and the load drivers take most of the other, so a second process can add only what is left (with s, p and d the
//   CPU per job of the servers, PostgreSQL and the drivers, the ratio is at most 2s / (s + p + d));
// - with each server process capped at BENCH_QUEUE_CPU_CAP of a core (default 0.25; test/support/cpu-cap.ts), as if
//   each ran on a machine of its own: the goal is checked on this one, since it shows whether a second process adds
//   its capacity (claims that do not serialize, no lock waits) rather than how many cores this machine has. At 0.25
//   two capped servers, PostgreSQL and the drivers need about one core in all, so the second process is not
//   starved by the first's neighbours (at 0.4 they needed ~1.6 of the 2).
// What is measured is the servers' capacity for queue operations, so each run starts from a warm process (a warm-up
// of its own, not counted: JIT and prepared statements once per process weighed 0.8 ms a job on two processes
// against 0.4 on one) and the drivers claim from a backlog (phased: polls of an empty queue are the driver's
// choice, not the server's cost).
import { scratchDatabase, usingPostgres } from '../support/database.ts';
import { queueThroughput } from '../trials/trials.ts';

const GOAL = 1.8;
const WARMUP_JOBS = 300;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function queueBench(rounds: number): Promise<boolean> {
  if (!usingPostgres) {
    console.log('RESULT queue throughput: skipped (PostgreSQL only: set TEST_DATABASE_URL)');
    return true;
  }
  const jobs = Number(process.env.BENCH_QUEUE_JOBS ?? 2000);
  const cap = Number(process.env.BENCH_QUEUE_CPU_CAP ?? 0.25);
  const settings = [
    { name: 'uncapped', cpuCap: undefined },
    { name: `each process capped at ${cap} core`, cpuCap: cap },
  ];
  const rates = new Map<string, number[]>();
  let capApplied = true;
  for (let round = 1; round <= rounds; round++) {
    for (const setting of settings) {
      for (const processes of [1, 2]) {
        const scratch = await scratchDatabase('postgresql');
        try {
          const r = await queueThroughput({ databaseUrl: scratch.url, processes, jobs, cpuCap: setting.cpuCap, phased: true, warmupJobs: WARMUP_JOBS });
          if (r.doubleClaims || r.lost) throw new Error(`queue throughput: ${JSON.stringify(r)}`);
          if (setting.cpuCap !== undefined && r.cpuCapCores === null) capApplied = false;
          const key = `${setting.name} ${processes}`;
          rates.set(key, [...(rates.get(key) ?? []), r.jobsPerSecond]);
          console.log(
            `queue throughput round ${round}, ${setting.name}: ${processes} process(es), ${jobs} jobs in ${r.ms} ms: ${r.jobsPerSecond} jobs/s ` +
              `(submit -> claim -> complete), ${r.serverCpuMsPerJob} ms of server CPU per job, ${r.emptyClaims} empty claims`,
          );
        } finally {
          await scratch.drop();
        }
      }
    }
  }
  let ok = true;
  for (const setting of settings) {
    const one = median(rates.get(`${setting.name} 1`)!);
    const two = median(rates.get(`${setting.name} 2`)!);
    const checked = setting.cpuCap !== undefined;
    const met = two >= GOAL * one;
    if (checked && capApplied) ok &&= met;
    const verdict = !checked
      ? 'information (bounded by the cores left beside PostgreSQL and the drivers)'
      : !capApplied
        ? 'not measured: this machine lets no cgroup be made'
        : met
          ? 'met'
          : 'MISSED';
    console.log(
      `RESULT queue throughput, ${setting.name}: one process ${one} jobs/s, two processes ${two} jobs/s, ratio ${(two / one).toFixed(2)}  target ratio >= ${GOAL}: ${verdict}`,
    );
  }
  return ok;
}
