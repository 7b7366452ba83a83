// Reset of one project for `npm run bench` (scenario name "reset"; issue 20): a project holding 1,000 resources of
// mixed kinds, made through the API (files with their bytes on disk, fine-tunes, videos, queue jobs, evaluations,
// secrets, each with the runner work it queues), then `POST /_control/reset {project_id}`; on SQLite, and on
// PostgreSQL when TEST_DATABASE_URL names one. Goal: < 250 ms, the median of BENCH_ROUNDS rounds of the client's
// round trip (what a test suite waits for; the duration the reset answers is reported beside it). The first round
// is the process's first reset (each table's first delete is prepared then). Then a snapshot of the platform with such
// a project is restored BENCH_ROUNDS times (reported, no goal).
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import { usingPostgres } from '../support/database.ts';
import { jsonl } from '../support/files.ts';
import { type Caller, startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from '../support/platform.ts';

const GOAL_MS = 250;
const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
const T2V = 'Wan-AI/Wan2.2-T2V-A14B';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** How many of each kind make the project's 1,000 resources. */
export const MIX = { files: 200, fineTunes: 150, videos: 150, queueJobs: 250, evaluations: 100, secrets: 150 };

async function inParallel(n: number, make: (i: number) => Promise<{ status: number; body: unknown }>): Promise<void> {
  for (let i = 0; i < n; i += 16) {
    const res = await Promise.all(Array.from({ length: Math.min(16, n - i) }, (_, k) => make(i + k)));
    const bad = res.find((r) => r.status !== 200);
    if (bad) throw new Error(`seeding answered ${bad.status}: ${JSON.stringify(bad.body)}`);
  }
}

/** Fills `caller`'s project with MIX through the API. */
export async function seedProject(caller: Caller): Promise<number> {
  const upload = (purpose: string, rows: unknown[], i: number) =>
    caller.http
      .post('/v1/files/upload')
      .field('purpose', purpose)
      .field('file_name', `d${i}.jsonl`)
      .attach('file', Buffer.from(jsonl(rows)), `d${i}.jsonl`);
  const train = Array.from({ length: 20 }, (_, i) => ({
    messages: [
      { role: 'user', content: `Question ${i}?` },
      { role: 'assistant', content: `Answer ${i}.` },
    ],
  }));
  const files: string[] = [];
  await inParallel(MIX.files, async (i) => {
    const res = await upload(i % 4 ? 'fine-tune' : 'eval', i % 4 ? train : [{ question: `q${i}`, response: 'yes' }], i);
    files[i] = res.body.id;
    return res;
  });
  const trainFiles = files.filter((_, i) => i % 4);
  const evalFiles = files.filter((_, i) => !(i % 4));
  await inParallel(MIX.fineTunes, (i) => caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: trainFiles[i % trainFiles.length] }));
  await inParallel(MIX.videos, (i) => caller.http.post('/v2/videos').send({ model: T2V, prompt: `video ${i}`, width: 128, height: 72, seconds: '1', fps: 12 }));
  await inParallel(MIX.queueJobs, (i) =>
    caller.http.post('/v1/queue/submit').send({ model: CHAT, payload: { messages: [{ role: 'user', content: `job ${i}` }] } }),
  );
  await inParallel(MIX.evaluations, (i) =>
    caller.http.post('/v1/evaluation').send({
      type: 'classify',
      parameters: {
        judge: { model: CHAT, model_source: 'serverless', system_template: 'Judge: {{ question }}' },
        labels: ['yes', 'no'],
        pass_labels: ['yes'],
        model_to_evaluate: 'response',
        input_data_file_path: evalFiles[i % evalFiles.length],
      },
    }),
  );
  await inParallel(MIX.secrets, (i) => caller.http.post('/v1/deployments/secrets').send({ name: `BENCH_${i}`, value: `value-${i}` }));
  return Object.values(MIX).reduce((a, b) => a + b, 0);
}

/**
 * A snapshot of the platform holding a project of 1,000 resources, restored `rounds` times (the first is the
 * process's first restore); reported, with no goal.
 */
async function restoreRounds(control: PlatformClient, t: TestPlatform, database: string, rounds: number): Promise<void> {
  await seedProject(t.other);
  const made = await control.POST('/_control/snapshots', { body: { name: 'bench' } });
  if (!made.data) throw new Error(`snapshot: ${JSON.stringify(made.error)}`);
  const client: number[] = [];
  const server: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const started = performance.now();
    const { data, error } = await control.POST('/_control/snapshots/{name}/restore', { params: { path: { name: 'bench' } } });
    const roundTrip = performance.now() - started;
    if (!data) throw new Error(`restore: ${JSON.stringify(error)}`);
    client.push(roundTrip);
    server.push(data.ms);
    console.log(`restore round ${round} (${database}): ${data.rows} rows, ${data.files} files: ${data.ms} ms (round trip ${roundTrip.toFixed(1)} ms)`);
  }
  console.log(
    `RESULT restore of a snapshot of ${made.data.rows} rows (${database}): round trip ${median(client).toFixed(1)} ms (the restore's own ${median(server)} ms)`,
  );
}

/** Answers whether the goal was met on every database measured. */
export async function resetBench(rounds: number): Promise<boolean> {
  let ok = true;
  for (const database of usingPostgres ? (['sqlite', 'postgresql'] as const) : (['sqlite'] as const)) {
    const t = await startTestPlatform({ database });
    try {
      const control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
      const server: number[] = [];
      const client: number[] = [];
      for (let round = 1; round <= rounds; round++) {
        const resources = await seedProject(t.other);
        const started = performance.now();
        const { data, error } = await control.POST('/_control/reset', { body: { project_id: t.other.identity.projectId } });
        const roundTrip = performance.now() - started;
        if (!data) throw new Error(`reset: ${JSON.stringify(error)}`);
        server.push(data.ms);
        client.push(roundTrip);
        console.log(
          `reset round ${round} (${database}): a project of ${resources} resources, ${data.deleted} rows: ${data.ms} ms (round trip ${roundTrip.toFixed(1)} ms)`,
        );
      }
      const ms = median(client);
      const met = ms < GOAL_MS;
      ok &&= met;
      console.log(
        `RESULT reset of a project of 1,000 resources (${database}): round trip ${ms.toFixed(1)} ms (the reset's own ${median(server)} ms)  target < ${GOAL_MS} ms: ${met ? 'met' : 'MISSED'}`,
      );
      await restoreRounds(control, t, database, rounds);
    } finally {
      await t.close();
    }
  }
  return ok;
}
