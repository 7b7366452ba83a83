// The outage campaign: a server process under mixed traffic while its PostgreSQL is stopped (and started again),
// then while its Redis is frozen (SIGSTOP, then SIGCONT). Both are private to the campaign (a cluster of its own,
// test/support/private-postgres.ts, and a redis-server on its own port), so nothing else on the machine notices.
// Reported: requests and their statuses in each phase, the slowest answer, requests that never answered, the
// writes acknowledged (2xx) and how many of them are missing afterwards (lost), writes refused with a 503 that were
// stored all the same, and how long after PostgreSQL was back the first database request was served (recovery).
// Used by `npm run trials` (test/trials/run.ts: 10 s outages) and by test/outage-campaign.test.ts (a short sample).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../server/db/index.ts';
import { startPrivatePostgres } from '../support/private-postgres.ts';
import { startServerProcess } from '../support/server-process.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const QUEUE = 'outage/queue';
/** A request that has not answered in this long is counted as hung (and given up). */
const HUNG_MS = 30_000;

type Phase = 'before' | 'postgres down' | 'postgres back' | 'redis frozen' | 'redis back';
type Kind = 'whoami' | 'list secrets' | 'create secret' | 'submit job' | 'job status' | 'chat' | 'upload';
/** The kinds that need the database (whoami is answered from the key cache once the key is known). */
const NEEDS_DATABASE = new Set<Kind>(['list secrets', 'create secret', 'submit job', 'job status', 'upload']);

interface Sample {
  kind: Kind;
  phase: Phase;
  started: number;
  ended: number;
  /** The HTTP status, or 0: no answer within HUNG_MS (or the connection failed). */
  status: number;
}

export interface PhaseFigures {
  requests: number;
  statuses: Record<string, number>;
  slowestMs: number;
}

export interface OutageResult {
  phases: Partial<Record<Phase, PhaseFigures>>;
  requests: number;
  /** Answers with status 500 (an outage must be 503). */
  errors500: number;
  /** Requests that got no answer: none within 30 s, or the connection dropped. */
  hung: number;
  acknowledgedWrites: number;
  /** Acknowledged writes missing afterwards. */
  lost: number;
  /** Writes answered 503 that were stored anyway (a connection lost while its commit was on its way). */
  storedDespite503: number;
  /** Work items the runner gave up (a dataset validation failed past its retries): the outage must cost none. */
  givenUp: number;
  /** Uploaded datasets still not validated a minute after the traffic stopped. */
  unvalidated: number;
  /** From PostgreSQL accepting connections again to the first database request served after it. */
  postgresRecoveryMs: number | null;
  /** Whether Redis was part of it (a redis-server was found). */
  redis: boolean;
  ms: number;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A redis-server of the campaign's own, or null where none is installed. */
export async function startPrivateRedis(): Promise<{ url: string; child: ChildProcess } | null> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const failed = await Promise.race([new Promise<boolean>((resolve) => child.once('error', () => resolve(true))), sleep(300).then(() => false)]);
  return failed ? null : { url: `redis://127.0.0.1:${port}`, child };
}

export async function outageCampaign(options: {
  /** How long PostgreSQL stays down, and Redis frozen (0: no Redis phase). */
  postgresDownMs: number;
  redisFrozenMs: number;
  /** Traffic before the first outage and after each. */
  steadyMs: number;
  concurrency?: number;
  log?: (line: string) => void;
}): Promise<OutageResult> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  const cluster = await startPrivatePostgres();
  const redis = options.redisFrozenMs > 0 ? await startPrivateRedis() : null;
  const env: Record<string, string> = {
    DATABASE_URL: cluster.url,
    RUNNER_POLL_MS: '100',
    // Limits high enough that steady traffic is never refused: a 429 here would be the outage's doing.
    RATE_LIMIT_BASE_REQUESTS: '100000',
    RATE_LIMIT_MAX_REQUESTS: '100000',
    RATE_LIMIT_BASE_TOKENS: '100000000',
    RATE_LIMIT_MAX_TOKENS: '100000000',
    RATE_LIMIT_MODEL_CAPACITY: '100000',
    ...(redis ? { REDIS_URL: redis.url } : {}),
  };
  const server = await startServerProcess(env);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const samples: Sample[] = [];
  const secrets = new Map<string, number>();
  const jobs = new Map<string, number>();
  const uploads = new Map<string, number>();
  let phase: Phase = 'before';
  let running = true;
  let n = 0;

  function call(
    kind: Kind,
    method: string,
    path: string,
    body?: Buffer | string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; json: any }> {
    const sample: Sample = { kind, phase, started: Date.now(), ended: 0, status: 0 };
    samples.push(sample);
    return new Promise((resolve) => {
      const done = (status: number, json: any) => {
        sample.ended = Date.now();
        sample.status = status;
        resolve({ status, json });
      };
      const req = http.request(
        `${server.url}${path}`,
        { method, agent, headers: { Authorization: `Bearer ${server.key}`, ...headers, ...(body ? { 'Content-Length': Buffer.byteLength(body) } : {}) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            let json: any = null;
            try {
              json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {}
            done(res.statusCode ?? 0, json);
          });
          res.on('error', () => done(0, null));
        },
      );
      req.setTimeout(HUNG_MS, () => req.destroy());
      req.on('error', () => done(0, null));
      req.end(body);
    });
  }
  const json = (kind: Kind, method: string, path: string, body: unknown) =>
    call(kind, method, path, JSON.stringify(body), { 'Content-Type': 'application/json' });

  async function one(): Promise<void> {
    const i = n++;
    const pick = i % 20;
    if (pick < 3) await call('whoami', 'GET', '/v1/whoami');
    else if (pick < 6) await call('list secrets', 'GET', '/v1/deployments/secrets');
    else if (pick < 9) {
      const name = `OUTAGE_${i}`;
      const res = await json('create secret', 'POST', '/v1/deployments/secrets', { name, value: 'v' });
      secrets.set(name, res.status);
    } else if (pick < 12) {
      const res = await json('submit job', 'POST', '/v1/queue/submit', { model: QUEUE, payload: { i }, info: { tag: `job-${i}` } });
      jobs.set(res.json?.requestId ?? `job-${i}`, res.status);
    } else if (pick < 14) {
      const known = [...jobs].find(([, s]) => s === 200)?.[0];
      if (known) await call('job status', 'GET', `/v1/queue/status?request_id=${known}&model=${encodeURIComponent(QUEUE)}`);
    } else if (pick < 18) {
      await json('chat', 'POST', '/v1/chat/completions', { model: CHAT, messages: [{ role: 'user', content: `Say ${i}.` }], max_tokens: 8 });
    } else {
      const boundary = `----outage${randomUUID()}`;
      const name = `outage-${i}.jsonl`;
      const part = (field: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${field}"\r\n\r\n${value}\r\n`;
      // Fine-tuning datasets, validated on the durable runner: its work goes on through the outages too.
      const body = `${part('purpose', 'fine-tune')}${part('file_name', name)}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n{"text": "row ${i}"}\n\r\n--${boundary}--\r\n`;
      const res = await call('upload', 'POST', '/v1/files/upload', body, { 'Content-Type': `multipart/form-data; boundary=${boundary}` });
      uploads.set(res.json?.id ?? name, res.status);
    }
  }

  const workers = Array.from({ length: options.concurrency ?? 8 }, async () => {
    while (running) await one();
  });

  let restartedAt = 0;
  try {
    await sleep(options.steadyMs);
    log(`PostgreSQL stopped for ${options.postgresDownMs} ms`);
    phase = 'postgres down';
    cluster.stop('fast');
    // One more caller that starts only now: on a loaded machine every worker may still be in a request begun before
    // the stop (pg_ctl holds this process's event loop meanwhile), leaving the phase with no request of its own.
    const probe = (async () => {
      while (running && phase === 'postgres down') await one();
    })();
    await sleep(options.postgresDownMs);
    // ...and stays down until a request begun meanwhile that needs it has been answered (at most 30 s more): on a
    // loaded machine every such request may still be waiting when it comes back, and then answers 200, leaving the
    // phase without the 503 it is there to show (seen once in a CI rehearsal, under the suite's own load).
    const until = Date.now() + 30_000;
    while (!samples.some((s) => s.phase === 'postgres down' && s.ended > 0 && NEEDS_DATABASE.has(s.kind)) && Date.now() < until) await sleep(50);
    cluster.start();
    restartedAt = Date.now();
    phase = 'postgres back';
    await probe;
    log('PostgreSQL started again');
    await sleep(options.steadyMs);
    if (redis) {
      log(`Redis frozen for ${options.redisFrozenMs} ms`);
      phase = 'redis frozen';
      redis.child.kill('SIGSTOP');
      await sleep(options.redisFrozenMs);
      redis.child.kill('SIGCONT');
      phase = 'redis back';
      log('Redis answering again');
      await sleep(options.steadyMs);
    }
  } finally {
    running = false;
    await Promise.all(workers);
    redis?.child.kill('SIGCONT');
  }

  try {
    // What was acknowledged is there; what was refused with a 503 is not (or is counted).
    const db = await openDatabase(cluster.url, { migrate: false });
    let lost = 0;
    let storedDespite503 = 0;
    let givenUp = 0;
    let unvalidated = 0;
    try {
      // The runner finishes the validations of the datasets uploaded (the outage delays them, and may retry them).
      const acknowledged = [...uploads].filter(([, s]) => s === 200).map(([id]) => id);
      const pending = () => db.prisma.file.count({ where: { id: { in: acknowledged }, status: 'PENDING' } });
      const deadline = Date.now() + 60_000;
      unvalidated = await pending();
      while (unvalidated > 0 && Date.now() < deadline) {
        await sleep(200);
        unvalidated = await pending();
      }
      givenUp = await db.prisma.workItem.count({ where: { state: 'failed' } });
      const storedSecrets = new Set((await db.prisma.secret.findMany({ select: { name: true } })).map((s) => s.name));
      const storedJobs = await db.prisma.queueJob.findMany({ where: { model: QUEUE }, select: { id: true, info: true } });
      const jobIds = new Set(storedJobs.map((j) => j.id));
      const jobTags = new Set(storedJobs.map((j) => JSON.parse(j.info).tag));
      const storedFiles = await db.prisma.file.findMany({ select: { id: true, filename: true } });
      const fileIds = new Set(storedFiles.map((f) => f.id));
      const fileNames = new Set(storedFiles.map((f) => f.filename));
      for (const [name, status] of secrets) {
        if (status === 200 && !storedSecrets.has(name)) lost++;
        if (status === 503 && storedSecrets.has(name)) storedDespite503++;
      }
      for (const [id, status] of jobs) {
        if (status === 200 && !jobIds.has(id)) lost++;
        if (status === 503 && jobTags.has(id)) storedDespite503++;
      }
      for (const [id, status] of uploads) {
        if (status === 200 && !fileIds.has(id)) lost++;
        if (status === 503 && fileNames.has(id)) storedDespite503++;
      }
    } finally {
      await db.close();
    }
    const phases: OutageResult['phases'] = {};
    for (const s of samples) {
      phases[s.phase] ??= { requests: 0, statuses: {}, slowestMs: 0 };
      const f = phases[s.phase]!;
      f.requests++;
      f.statuses[s.status] = (f.statuses[s.status] ?? 0) + 1;
      f.slowestMs = Math.max(f.slowestMs, s.ended - s.started);
    }
    const served = samples.filter((s) => NEEDS_DATABASE.has(s.kind) && s.started >= restartedAt && s.status >= 200 && s.status < 300);
    return {
      phases,
      requests: samples.length,
      errors500: samples.filter((s) => s.status === 500).length,
      hung: samples.filter((s) => s.status === 0).length,
      acknowledgedWrites: [...secrets.values(), ...jobs.values(), ...uploads.values()].filter((s) => s === 200).length,
      lost,
      storedDespite503,
      givenUp,
      unvalidated,
      postgresRecoveryMs: served.length ? Math.min(...served.map((s) => s.ended)) - restartedAt : null,
      redis: redis !== null,
      ms: Date.now() - started,
    };
  } finally {
    agent.destroy();
    await server.stop('SIGTERM');
    redis?.child.kill('SIGKILL');
    cluster.destroy();
  }
}
