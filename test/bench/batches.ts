// Batch throughput for `npm run bench` (scenario name "batch"): a batch of BENCH_BATCH_LINES short chat completions
// (default 10,000) run by one server process's runner on the local engine, against the same requests sent one by
// one over HTTP (one connection, each sent when the last is answered) to the same kind of server. Reports lines per
// second and the server's CPU per line (from /proc) for both, and their ratios. The rate limits are off on both
// sides (at their default base a throughput run measures the limit, not the server); each side has a fresh
// database. `npx tsx test/bench/batches.ts` runs it alone.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ServerProcess, startServerProcess } from '../support/server-process.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const body = (i: number) => ({ model: CHAT, max_tokens: 16, messages: [{ role: 'user', content: `Say something short about the number ${i}.` }] });

const cpuMicros = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};

async function withServer<T>(dir: string, name: string, run: (s: ServerProcess) => Promise<T>): Promise<T> {
  const server = await startServerProcess({ DATABASE_URL: `file:${join(dir, `${name}.db`)}`, DATA_DIR: join(dir, name), RATE_LIMITS: 'off' });
  try {
    return await run(server);
  } finally {
    await server.stop();
  }
}

export interface BatchFigures {
  lines: number;
  batch: { ms: number; linesPerSecond: number; cpuMicrosPerLine: number };
  oneByOne: { ms: number; linesPerSecond: number; cpuMicrosPerLine: number };
}

export async function batchBench(lines = Number(process.env.BENCH_BATCH_LINES ?? 10_000)): Promise<BatchFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-batches-'));
  try {
    const batch = await withServer(dir, 'batch', async (server) => {
      const auth = { Authorization: `Bearer ${server.key}` };
      const form = new FormData();
      form.set('purpose', 'batch-api');
      form.set('file_name', 'bench.jsonl');
      const input = Array.from({ length: lines }, (_, i) => JSON.stringify({ custom_id: `b${i}`, body: body(i) })).join('\n');
      form.set('file', new Blob([input]), 'bench.jsonl');
      const file = (await (await fetch(`${server.url}/v1/files/upload`, { method: 'POST', headers: auth, body: form })).json()) as { id: string };
      const pid = server.child.pid!;
      const cpu0 = cpuMicros(pid);
      const t0 = performance.now();
      const created = await fetch(`${server.url}/v1/batches`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ endpoint: '/v1/chat/completions', input_file_id: file.id }),
      });
      const { job } = (await created.json()) as { job: { id: string } };
      for (;;) {
        await sleep(50);
        const b = (await (await fetch(`${server.url}/v1/batches/${job.id}`, { headers: auth })).json()) as {
          status: string;
          error?: string;
          error_file_id?: string;
        };
        if (b.status === 'COMPLETED' && !b.error_file_id) break;
        if (b.status !== 'VALIDATING' && b.status !== 'IN_PROGRESS') throw new Error(`the bench batch ended ${JSON.stringify(b)}`);
      }
      const ms = performance.now() - t0;
      return { ms, cpu: cpuMicros(pid) - cpu0 };
    });
    const single = await withServer(dir, 'single', async (server) => {
      const headers = { Authorization: `Bearer ${server.key}`, 'Content-Type': 'application/json' };
      const pid = server.child.pid!;
      // Warm as the batch side is by its first chunk: the first requests compile the validator.
      for (let i = 0; i < 20; i++) await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body(i)) });
      const cpu0 = cpuMicros(pid);
      const t0 = performance.now();
      for (let i = 0; i < lines; i++) {
        const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body(i)) });
        if (res.status !== 200) throw new Error(`one by one: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
      const ms = performance.now() - t0;
      return { ms, cpu: cpuMicros(pid) - cpu0 };
    });
    const figures = (r: { ms: number; cpu: number }) => ({
      ms: Math.round(r.ms),
      linesPerSecond: Math.round((lines * 1000) / r.ms),
      cpuMicrosPerLine: Math.round(r.cpu / lines),
    });
    const out = { lines, batch: figures(batch), oneByOne: figures(single) };
    console.log(
      `RESULT batch: ${lines} lines in one batch ${out.batch.linesPerSecond} lines/s, ${out.batch.cpuMicrosPerLine} µs server CPU/line; ` +
        `one by one over HTTP ${out.oneByOne.linesPerSecond} lines/s, ${out.oneByOne.cpuMicrosPerLine} µs server CPU/line; ` +
        `ratio ${(out.batch.linesPerSecond / out.oneByOne.linesPerSecond).toFixed(2)}x lines/s, ${(out.oneByOne.cpuMicrosPerLine / out.batch.cpuMicrosPerLine).toFixed(2)}x less CPU per line`,
    );
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await batchBench();
