// One load driver per server process for queueThroughput (test/trials/trials.ts), in its own OS process so that the
// load generator is not one process's CPU share: it submits its share of the jobs to its server, and its workers
// claim and complete jobs there through the worker API, appending each claimed request id to OUT. It prints `ready`,
// starts on a `go` line, and exits when its share is submitted and the queue is empty, printing `empty <n>`: the claims
// that found nothing waiting (each a request that moved no job). With PHASED=1 its workers start once its share is
// submitted, so that they claim from a backlog rather than poll an empty queue (the bench's setting: what it measures
// is the server's capacity for queue operations, not the driver's polling).
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

const { URL: url, KEY: key, MODEL: model, JOBS, WORKERS, BATCH, OUT: out, NAME: name, PHASED } = process.env as Record<string, string>;
// node:http with a keep-alive agent rather than fetch: a driver's own CPU per request is a third of fetch's, and on
// this 2-core machine what the drivers take is taken from the servers being measured.
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
function call(method: string, path: string, body?: unknown): Promise<any> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}${path}`,
      { method, agent, headers: payload ? { ...headers, 'Content-Length': Buffer.byteLength(payload) } : headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          if ((res.statusCode ?? 500) >= 400) reject(new Error(`${method} ${path}: ${res.statusCode} ${JSON.stringify(json)}`));
          else resolve(json);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

let empty = 0;

async function run() {
  const jobs = Number(JOBS);
  let submitting = true;
  const submitters = Promise.all(
    Array.from({ length: 4 }, async (_, k) => {
      for (let i = k; i < jobs; i += 4) await call('POST', '/v1/queue/submit', { model, payload: { i: `${name}-${i}` }, priority: i % 3 });
    }),
  ).then(() => (submitting = false));
  if (PHASED === '1') await submitters;
  const workers = Array.from({ length: Number(WORKERS) }, async (_, w) => {
    for (;;) {
      const { data } = await call('POST', '/v1/queue/claim', { model, max_jobs: Number(BATCH), claim_timeout_seconds: 600, worker_id: `${name}w${w}` });
      if (data.length === 0) {
        empty++;
        if (!submitting && (await call('GET', `/v1/queue/metrics?model=${encodeURIComponent(model)}`)).messages_waiting === 0) return;
        // Nothing waiting yet: back off, so that idle workers do not take the CPU the submits need.
        await sleep(100);
        continue;
      }
      appendFileSync(out, data.map((j: { request_id: string }) => `${j.request_id}\n`).join(''));
      for (const j of data)
        await call('POST', '/v1/queue/complete', { model, request_id: j.request_id, claim_token: j.claim_token, outputs: { by: `${name}w${w}` } });
    }
  });
  await Promise.all([submitters, ...workers]);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'go')
    run().then(
      () => {
        console.log(`empty ${empty}`);
        process.exit(0);
      },
      (err) => {
        console.error(err);
        process.exit(1);
      },
    );
});
console.log('ready');
