// Runner throughput for `npm run bench` (scenario name "runner throughput"): a backlog of BENCH_RUNNER_ITEMS (default
// 1,000) file validations, then as many built-in queue jobs, made while no runner runs, then drained by the durable
// runner as a server runs it (its poll loop, RUNNER_BATCH and RUNNER_POLL_MS as configured), in this process. On
// PostgreSQL when TEST_DATABASE_URL names one, else SQLite. Reports items/s from the runner's start to the last
// subject's outcome, and this process's CPU per item (the runner and the work; the database's own is not counted).
// Each subject must end done exactly once: every file validated, every job done.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_PROJECT_SLUG } from '../../server/accounts.ts';
import { systemClock } from '../../server/core/clock.ts';
import { loadConfig } from '../../server/core/config.ts';
import { createLogger } from '../../server/core/log.ts';
import { storeFile } from '../../server/modules/files/index.ts';
import { modules } from '../../server/modules/index.ts';
import { submitQueueJob } from '../../server/modules/queue/handlers.ts';
import type { Context } from '../../server/modules/types.ts';
import { type Platform, startPlatform } from '../../server/platform.ts';
import { Runner } from '../../server/runner/runner.ts';
import { scratchDatabase, usingPostgres } from '../support/database.ts';

const CHAT_MODEL = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const DATASET = `${[
  {
    messages: [
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Hi there.' },
    ],
  },
  {
    messages: [
      { role: 'user', content: 'What is a llama?' },
      { role: 'assistant', content: 'A South American camelid.' },
    ],
  },
]
  .map((l) => JSON.stringify(l))
  .join('\n')}\n`;

interface Backlog {
  name: string;
  make(platform: Platform, projectId: string, n: number): Promise<void>;
  /** How many of the backlog's subjects have reached their outcome. */
  done(platform: Platform, projectId: string): Promise<number>;
}

const backlogs: Backlog[] = [
  {
    name: 'file validations',
    make: async (p, projectId, n) => {
      for (let i = 0; i < n; i++) await storeFile(p.services, { projectId, purpose: 'fine-tune', filename: `bench-${i}.jsonl`, fileType: 'jsonl' }, DATASET);
    },
    done: (p, projectId) => p.services.db.prisma.file.count({ where: { projectId, status: 'COMPLETED' } }),
  },
  {
    name: 'queue jobs (built-in chat worker)',
    make: async (p, projectId, n) => {
      for (let i = 0; i < n; i++) {
        const body = { model: CHAT_MODEL, payload: { messages: [{ role: 'user', content: `Say something short (${i}).` }], max_tokens: 8 } };
        await submitQueueJob({ ...p.services, identity: { projectId }, body } as unknown as Context<'submitQueueJob'>);
      }
    },
    done: (p, projectId) => p.services.db.prisma.queueJob.count({ where: { projectId, status: 'done' } }),
  },
];

/** Drains one backlog with a fresh runner; answers items/s and CPU ms per item. */
async function drainOne(backlog: Backlog, n: number): Promise<{ perSecond: number; cpuMsPerItem: number }> {
  const scratch = await scratchDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-runner-'));
  const base = loadConfig({});
  const config = { ...base, databaseUrl: scratch.url, dataDir, logLevel: 'warn', runner: { ...base.runner, enabled: false } };
  const log = createLogger('warn', process.stderr);
  const platform = await startPlatform(config, { listen: false, log });
  let runner: Runner | undefined;
  try {
    const { id: projectId } = await platform.services.db.prisma.project.findUniqueOrThrow({ where: { slug: DEFAULT_PROJECT_SLUG } });
    await backlog.make(platform, projectId, n);
    // The runner a server starts (platform.ts), with every module's work.
    runner = new Runner(platform.services.db, systemClock, { ...base.runner, enabled: true }, log);
    const services = { ...platform.services, runner };
    for (const m of modules) for (const [kind, work] of Object.entries(m.work?.(services) ?? {})) runner.register(kind, work);
    const cpu = process.cpuUsage();
    const started = performance.now();
    runner.start();
    let done = await backlog.done(platform, projectId);
    while (done < n) {
      await sleep(50);
      done = await backlog.done(platform, projectId);
    }
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    if (done !== n) throw new Error(`${backlog.name}: ${done} of ${n} done`);
    return { perSecond: (n / ms) * 1000, cpuMsPerItem: (used.user + used.system) / 1000 / n };
  } finally {
    await runner?.stop();
    await platform.close();
    await scratch.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function runnerBench(rounds: number): Promise<void> {
  const n = Number(process.env.BENCH_RUNNER_ITEMS ?? 1000);
  const base = loadConfig({}).runner;
  const where = usingPostgres ? 'PostgreSQL' : 'SQLite';
  for (const backlog of backlogs) {
    const rates: number[] = [];
    const cpus: number[] = [];
    for (let round = 1; round <= rounds; round++) {
      const r = await drainOne(backlog, n);
      rates.push(r.perSecond);
      cpus.push(r.cpuMsPerItem);
      console.log(`runner throughput round ${round}, ${backlog.name} on ${where}: ${r.perSecond.toFixed(1)} items/s, ${r.cpuMsPerItem.toFixed(2)} ms CPU/item`);
    }
    console.log(
      `RESULT runner throughput, ${backlog.name} on ${where}: ${median(rates).toFixed(1)} items/s, ${median(cpus).toFixed(2)} ms CPU/item ` +
        `(a backlog of ${n}; RUNNER_BATCH ${base.batch}, RUNNER_POLL_MS ${base.pollMs})`,
    );
  }
}
