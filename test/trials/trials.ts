// Durability trials against real server processes (`node server/main.ts`, as `npm start` runs it):
// - killTrials: each trial starts jobs of every kind the runner works (a queue job on a built-in worker, a video,
//   a model upload, a remediation, a v2 deployment, a fine-tuning job, an evaluation with the local judge, a
//   fine-tuning file's validation, a rollout's steps), kills the server with SIGKILL at a random moment while they
//   run, starts it again on the same database, and checks that every job finishes (none lost) and that no step
//   was applied twice (no move of a machine scheduled its next step twice, no queue job claimed more often than
//   its timeouts allow, no work item given up, a fine-tune's checkpoints, events and catalogue model made once, an
//   evaluation's result file recorded once and no stray result bytes left on disk, a rollout's steps each begun and
//   passed once with one change of its endpoint's split each);
// - twoProcessQueue: two server processes on one PostgreSQL database, jobs submitted to both and claimed and
//   completed through both by workers using the worker API; every claim is recorded, and each job must be claimed
//   exactly once (no double claim) and be done (no loss).
// Used by `npm run trials` (test/trials/run.ts: the full counts) and by test/trials.test.ts (a fast sample).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { root } from '../../server/core/paths.ts';
import { type Database, openDatabase } from '../../server/db/index.ts';
import { capCpu } from '../support/cpu-cap.ts';
import { type ServerProcess, startServerProcess } from '../support/server-process.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const VIDEO = 'Wan-AI/Wan2.2-T2V-A14B';
const DEPLOY_MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';
const DEPLOY_CONFIG = 'cr_llama_3_1_8b_h100';
const FINE_TUNE_BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
/** A small conversation dataset: a fine-tune of it plans a few steps, checkpoints and evaluations. */
const DATASET = Array.from({ length: 12 }, (_, i) =>
  JSON.stringify({
    messages: [
      { role: 'user', content: `Question ${i}?` },
      { role: 'assistant', content: `Answer ${i}.` },
    ],
  }),
).join('\n');
/** A batch's input: chat lines, every seventh one refused (an unknown role), so both result files grow. */
const BATCH_LINES = 30;
const batchInput = (trial: number) =>
  Array.from({ length: BATCH_LINES }, (_, i) =>
    JSON.stringify({
      custom_id: `t${trial}-${i}`,
      body: { model: CHAT, max_tokens: 4, messages: [{ role: i % 7 === 3 ? 'wizard' : 'user', content: `line ${i}` }] },
    }),
  ).join('\n');
const EVAL_INPUT = Array.from({ length: 8 }, (_, i) => JSON.stringify({ question: `Is ${i} even?`, response: i % 2 ? 'no' : 'yes' })).join('\n');

/** Durations short enough for many trials, long enough that a kill lands in the middle of the work. */
const TRIAL_ENV = {
  RUNNER_POLL_MS: '50',
  RUNNER_LEASE_MS: '1000',
  DURATION_QUEUE_WORK_MS: '400',
  DURATION_QUEUE_CLAIM_TIMEOUT_MS: '1000',
  DURATION_MODEL_UPLOAD_QUEUE_MS: '100',
  DURATION_MODEL_UPLOAD_MS: '400',
  DURATION_REMEDIATION_START_MS: '100',
  DURATION_REMEDIATION_RUN_MS: '400',
  DURATION_DEPLOYMENT_PROVISION_MS: '400',
  DURATION_FILE_VALIDATION_MS: '200',
  DURATION_FINE_TUNE_QUEUE_MS: '100',
  DURATION_FINE_TUNE_TRAIN_MS: '300',
  DURATION_FINE_TUNE_UPLOAD_MS: '100',
  DURATION_EVALUATION_START_MS: '100',
  DURATION_EVALUATION_RUN_MS: '300',
  DURATION_DEPLOYMENT_STOP_MS: '200',
  DURATION_BATCH_CHUNK_MS: '50',
};
/** A rollout's steps (the target's percent), each lasting ROLLOUT_STEP. */
const ROLLOUT_STEPS = [25, 50, 100];
const ROLLOUT_STEP = '0.5s';

async function call(server: ServerProcess, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json: any = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Uploads a file (multipart, as clients do); answers its id. */
async function upload(server: ServerProcess, key: string, purpose: string, name: string, content: string): Promise<string> {
  const form = new FormData();
  form.set('purpose', purpose);
  form.set('file_name', name);
  form.set('file', new Blob([content]), name);
  const res = await fetch(`${server.url}/v1/files/upload`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  const json: any = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`upload ${name}: ${res.status} ${JSON.stringify(json)}`);
  return json.id;
}

interface Created {
  queue: string[];
  videos: string[];
  uploads: string[];
  remediations: string[];
  deployments: string[];
  fineTunes: string[];
  evaluations: string[];
  files: string[];
  rollouts: string[];
  batches: string[];
}

export interface KillTrialsResult {
  trials: number;
  jobs: Record<keyof Created, number>;
  /** Jobs that did not finish as they should (lost). */
  lost: string[];
  /** Steps applied twice, claims beyond the timeouts, items given up. */
  doubled: string[];
  /** How many kills landed while the runner held work in hand. */
  killsMidWork: number;
  /** How many kills landed while the trial's rollout was RUNNING (in one of its steps). */
  rolloutsKilledRunning: number;
  /** How many kills landed while the trial's batch was IN_PROGRESS (some of its lines committed, some not). */
  batchesKilledRunning: number;
  ms: number;
}

export async function killTrials(options: { databaseUrl: string; trials: number; log?: (line: string) => void }): Promise<KillTrialsResult> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const dataDir = mkdtempSync(join(tmpdir(), 'trials-data-'));
  const env = { ...TRIAL_ENV, DATABASE_URL: options.databaseUrl, DATA_DIR: dataDir };
  let server = await startServerProcess(env);
  const key = server.key!;
  const db = await openDatabase(options.databaseUrl, { migrate: false });
  const created: Created = {
    queue: [],
    videos: [],
    uploads: [],
    remediations: [],
    deployments: [],
    fineTunes: [],
    evaluations: [],
    files: [],
    rollouts: [],
    batches: [],
  };
  let killsMidWork = 0;
  let rolloutsKilledRunning = 0;
  let batchesKilledRunning = 0;
  const lostDeployments: string[] = [];
  const doubledRollouts: string[] = [];
  const timings: string[] = [];
  try {
    const projectId = (await call(server, key, 'GET', '/v1/whoami')).project_id as string | undefined;
    const cluster = (await call(server, key, 'GET', '/v1/compute/clusters')).clusters[0];
    // An instance whose remediations succeed (the seed also has one marked unrecoverable, whose remediations fail by design).
    const nodes = cluster.gpu_worker_nodes as { node_id: string; instance_id: string }[];
    const instances = nodes.filter((n) => n.node_id === 'gpu-node-1-vm1').map((n) => n.instance_id);
    const project = projectId ?? (await db.prisma.apiKey.findFirstOrThrow()).projectId;
    // The fine-tunes' training file and the evaluations' input, uploaded (and the training file validated) before the first kill.
    const trainingFile = await upload(server, key, 'fine-tune', 'train.jsonl', DATASET);
    const evalInput = await upload(server, key, 'eval', 'input.jsonl', EVAL_INPUT);
    for (const until = Date.now() + 30_000; (await db.prisma.file.findUniqueOrThrow({ where: { id: trainingFile } })).status === 'PENDING'; ) {
      if (Date.now() > until) throw new Error(`the training file ${trainingFile} was not validated`);
      await sleep(50);
    }

    for (let trial = 0; trial < options.trials; trial++) {
      // A rollout between two READY deployments of their own endpoint, started just before the kill's random moment,
      // which lands in one of its steps (they last longer than the moment's range).
      const rolloutEndpoint = (await call(server, key, 'POST', `/v2/projects/${project}/endpoints`, { name: `trial-ro-${trial}-${Date.now()}` })).id as string;
      const pairIds: string[] = [];
      for (const name of ['blue', 'green']) {
        const dep = await call(server, key, 'POST', `/v2/projects/${project}/endpoints/${rolloutEndpoint}/deployments`, {
          name,
          model: DEPLOY_MODEL,
          config: DEPLOY_CONFIG,
          autoscaling: { minReplicas: 1, maxReplicas: 1 },
        });
        pairIds.push(dep.id);
      }
      for (const until = Date.now() + 30_000; (await db.prisma.deployment.count({ where: { id: { in: pairIds }, state: 'DEPLOYMENT_STATE_READY' } })) < 2; ) {
        if (Date.now() > until) throw new Error(`the rollout's deployments ${pairIds.join(', ')} did not become READY`);
        await sleep(50);
      }
      const rollouts = `/v2/projects/${project}/endpoints/${rolloutEndpoint}/rollouts`;
      const ro = await call(server, key, 'POST', rollouts, {
        sourceDeploymentId: pairIds[0],
        targetDeploymentId: pairIds[1],
        canary: { steps: ROLLOUT_STEPS.map((traffic) => ({ traffic })), stepInterval: ROLLOUT_STEP },
        metrics: [{ name: 'router_error_rate', stat: 'METRIC_STAT_TYPE_AVG', thresholdCheck: { value: 0.05, operator: 'THRESHOLD_OPERATOR_LTE' } }],
        finalSourceReplicas: 0,
      });
      created.rollouts.push(ro.id);

      // One job of every kind, then a kill at a random moment while they run.
      const q = await call(server, key, 'POST', '/v1/queue/submit', { model: CHAT, payload: { messages: [{ role: 'user', content: `trial ${trial}` }] } });
      created.queue.push(q.requestId);
      const v = await call(server, key, 'POST', '/v2/videos', {
        model: VIDEO,
        prompt: `trial ${trial}`,
        width: 64,
        height: 64,
        seconds: '1',
        fps: 8,
        seed: trial,
      });
      created.videos.push(v.id);
      const u = await call(server, key, 'POST', '/v1/models', { model_name: `trial-${Date.now()}-${trial}`, model_source: `acme/trial-${trial}` });
      created.uploads.push(u.data.job_id);
      const instance = instances[0]!;
      const r = await call(server, key, 'POST', `/v1/compute/clusters/${cluster.cluster_id}/instances/${instance}/remediations`, {
        mode: 'REMEDIATION_MODE_REBOOT_VM',
      });
      created.remediations.push(`${cluster.cluster_id}/${instance}/${r.id}`);
      // A deployment holds hardware while it runs: each trial has its own endpoint, deleted (releasing it) once checked.
      const endpoint = (await call(server, key, 'POST', `/v2/projects/${project}/endpoints`, { name: `trial-${trial}-${Date.now()}` })).id as string;
      const d = await call(server, key, 'POST', `/v2/projects/${project}/endpoints/${endpoint}/deployments`, {
        name: `d${trial}`,
        model: DEPLOY_MODEL,
        config: DEPLOY_CONFIG,
        autoscaling: { minReplicas: 1, maxReplicas: 1 },
      });
      created.deployments.push(d.id);
      const ft = await call(server, key, 'POST', '/v1/fine-tunes', {
        model: FINE_TUNE_BASE,
        training_file: trainingFile,
        n_epochs: 2,
        n_checkpoints: 2,
        n_evals: 0,
        suffix: `t${trial}`,
      });
      created.fineTunes.push(ft.id);
      const ev = await call(server, key, 'POST', '/v1/evaluation', {
        type: 'classify',
        parameters: {
          judge: { model: CHAT, model_source: 'serverless', system_template: 'Judge: {{ question }}' },
          labels: ['yes', 'no'],
          pass_labels: ['yes'],
          model_to_evaluate: 'response',
          input_data_file_path: evalInput,
        },
      });
      created.evaluations.push(ev.workflow_id);
      created.files.push(await upload(server, key, 'fine-tune', `trial-${trial}.jsonl`, DATASET));
      const batchFile = await upload(server, key, 'batch-api', `batch-${trial}.jsonl`, batchInput(trial));
      created.batches.push((await call(server, key, 'POST', '/v1/batches', { endpoint: '/v1/chat/completions', input_file_id: batchFile })).job.id);

      // A random moment, then the first moment after it (within a second) at which the runner holds work in hand:
      // a kill between steps tests less than one in the middle of a step.
      await call(server, key, 'POST', `${rollouts}/${ro.id}/start`);
      await sleep(Math.random() * 600);
      let inHand = false;
      for (const until = Date.now() + 1000; !inHand && Date.now() < until; ) {
        inHand = (await db.prisma.workItem.count({ where: { state: 'running' } })) > 0;
        if (!inHand) await sleep(5);
      }
      if (inHand) killsMidWork++;
      if ((await db.prisma.rollout.findUniqueOrThrow({ where: { id: ro.id } })).state === 'ROLLOUT_STATE_RUNNING') rolloutsKilledRunning++;
      const batch = await db.prisma.batch.findUniqueOrThrow({ where: { id: created.batches.at(-1)! } });
      if (batch.status === 'IN_PROGRESS' && batch.linesDone > 0) batchesKilledRunning++;
      await server.stop('SIGKILL');
      const killedAt = Date.now();
      server = await startServerProcess(env);
      const t0 = Date.now();
      const restartMs = t0 - killedAt;
      await settle(db, created, 60_000);
      timings.push(`restart ${restartMs} ms, settle ${Date.now() - t0} ms`);
      const dep = await db.prisma.deployment.findUnique({ where: { id: d.id } });
      if (dep?.state !== 'DEPLOYMENT_STATE_READY') lostDeployments.push(`deployment ${d.id}: ${dep?.state ?? 'absent'}`);
      await call(server, key, 'DELETE', `/v2/projects/${project}/endpoints/${endpoint}`);
      await checkRollout(db, ro.id, lostDeployments, doubledRollouts);
      await call(server, key, 'DELETE', `/v2/projects/${project}/endpoints/${rolloutEndpoint}`);
      log(`trial ${trial + 1}/${options.trials}: ${timings.at(-1)}; killed with work in hand ${killsMidWork} times so far`);
    }
    const { lost, doubled } = await check(db, created, dataDir);
    lost.push(...lostDeployments);
    doubled.push(...doubledRollouts);
    return {
      trials: options.trials,
      jobs: Object.fromEntries(Object.entries(created).map(([k, v]) => [k, v.length])) as KillTrialsResult['jobs'],
      lost,
      doubled,
      killsMidWork,
      rolloutsKilledRunning,
      batchesKilledRunning,
      ms: Date.now() - started,
    };
  } finally {
    await server.stop('SIGKILL');
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const ids = (xs: string[]) => xs.map((x) => x.split('/').pop()!);

/**
 * A rollout ended COMPLETED once: each step begun and passed once, one change of its endpoint's split per step and
 * one at completion, its source stopped once (its final replicas). Checked before its endpoint is deleted.
 */
async function checkRollout(db: Database, id: string, lost: string[], doubled: string[]): Promise<void> {
  const r = await db.prisma.rollout.findUniqueOrThrow({ where: { id } });
  const steps = await db.prisma.rolloutStep.findMany({ where: { rolloutId: r.id }, orderBy: { stepIndex: 'asc' } });
  const states = steps.map((s) => `${s.trafficPercent} ${s.state}`);
  if (
    r.state !== 'ROLLOUT_STATE_COMPLETED' ||
    steps.length !== ROLLOUT_STEPS.length ||
    steps.some((s) => s.state !== 'ROLLOUT_STEP_STATE_PASSED' || !s.metrics)
  )
    lost.push(`rollout ${r.id}: ${r.state}, steps ${states.join(', ')}`);
  const events = await db.prisma.endpointEvent.findMany({ where: { endpointId: r.endpointId }, orderBy: { seq: 'asc' } });
  const splits = events.filter((e) => e.type === 'endpoint.updated').map((e) => e.message.split('Traffic split: ')[1]);
  if (splits.length !== ROLLOUT_STEPS.length + 1 || new Set(splits).size !== splits.length)
    doubled.push(`rollout ${r.id}: ${splits.length} split changes for ${ROLLOUT_STEPS.length} steps: ${splits.join(' ')}`);
  const moves = events.filter((e) => e.deploymentId === r.sourceDeploymentId && e.type === 'deployment.state_changed').map((e) => e.status);
  if (moves.join() !== 'DEPLOYMENT_STATE_READY,DEPLOYMENT_STATE_STOPPING,DEPLOYMENT_STATE_STOPPED')
    doubled.push(`rollout ${r.id}: its source moved ${moves.join(' -> ')}`);
}

const sources = async (db: Database, rollouts: string[]) =>
  (await db.prisma.rollout.findMany({ where: { id: { in: rollouts } }, select: { sourceDeploymentId: true } })).map((r) => r.sourceDeploymentId);

/** Waits until no created job is still in progress (or the time is up). */
async function settle(db: Database, c: Created, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const busy =
      (await db.prisma.queueJob.count({ where: { id: { in: c.queue }, status: { in: ['pending', 'running'] } } })) +
      (await db.prisma.video.count({ where: { id: { in: c.videos }, status: 'in_progress' } })) +
      (await db.prisma.modelUploadJob.count({ where: { id: { in: c.uploads }, status: { in: ['Queued', 'Running'] } } })) +
      (await db.prisma.remediation.count({ where: { id: { in: ids(c.remediations) }, state: { in: ['PENDING', 'RUNNING', 'PENDING_APPROVAL'] } } })) +
      (await db.prisma.deployment.count({ where: { id: { in: c.deployments }, state: 'DEPLOYMENT_STATE_PROVISIONING' } })) +
      (await db.prisma.fineTune.count({ where: { id: { in: c.fineTunes }, status: { notIn: ['completed', 'error', 'cancelled'] } } })) +
      (await db.prisma.evaluationJob.count({ where: { id: { in: c.evaluations }, status: { in: ['pending', 'queued', 'running'] } } })) +
      (await db.prisma.file.count({ where: { id: { in: c.files }, status: 'PENDING' } })) +
      (await db.prisma.rollout.count({ where: { id: { in: c.rollouts }, state: { in: ['ROLLOUT_STATE_PENDING', 'ROLLOUT_STATE_RUNNING'] } } })) +
      (await db.prisma.batch.count({ where: { id: { in: c.batches }, status: { in: ['VALIDATING', 'IN_PROGRESS'] } } })) +
      // The source's stop (the rollout's final replicas) finishes too.
      (await db.prisma.deployment.count({ where: { id: { in: await sources(db, c.rollouts) }, state: { not: 'DEPLOYMENT_STATE_STOPPED' } } }));
    if (busy === 0) return;
    if (Date.now() + 200 > until) {
      const items = await db.prisma.workItem.findMany({
        where: { state: { in: ['queued', 'running'] } },
        select: { kind: true, state: true, failures: true, lastError: true, runAt: true },
      });
      console.log(`still busy: ${JSON.stringify(items, (_k, v) => (typeof v === 'bigint' ? Number(v) - Date.now() : v))}`);
    }
    await sleep(100);
  }
}

async function check(db: Database, c: Created, dataDir: string): Promise<{ lost: string[]; doubled: string[] }> {
  const lost: string[] = [];
  const doubled: string[] = [];
  const expectAll = async <T extends { id: string }>(what: string, wanted: string[], rows: T[], ok: (r: T) => boolean) => {
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of wanted) {
      const r = byId.get(id);
      if (!r || !ok(r)) lost.push(`${what} ${id}: ${r ? JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)).slice(0, 300) : 'absent'}`);
    }
  };
  const jobs = await db.prisma.queueJob.findMany({ where: { id: { in: c.queue } } });
  await expectAll('queue job', c.queue, jobs, (j) => j.status === 'done' && j.outputs !== null);
  await expectAll(
    'video',
    c.videos,
    await db.prisma.video.findMany({ where: { id: { in: c.videos } } }),
    (v) => v.status === 'completed' && !!v.file && (v.bytes ?? 0) > 0,
  );
  await expectAll('upload', c.uploads, await db.prisma.modelUploadJob.findMany({ where: { id: { in: c.uploads } } }), (u) => u.status === 'Complete');
  await expectAll(
    'remediation',
    ids(c.remediations),
    await db.prisma.remediation.findMany({ where: { id: { in: ids(c.remediations) } } }),
    (r) => r.state === 'SUCCEEDED',
  );
  // Deployments are checked READY at the end of their trial (their endpoint is deleted then).
  await expectAll(
    'file',
    c.files,
    await db.prisma.file.findMany({ where: { id: { in: c.files } } }),
    (f) => f.status === 'COMPLETED' && JSON.parse(f.report ?? '{}').valid === true,
  );

  // A fine-tune ends completed once: each checkpoint once (one final), each event of a step once, one catalogue model.
  const fineTunes = await db.prisma.fineTune.findMany({ where: { id: { in: c.fineTunes } } });
  await expectAll('fine-tune', c.fineTunes, fineTunes, (j) => j.status === 'completed' && !!j.outputModelId);
  for (const j of fineTunes) {
    const checkpoints = await db.prisma.fineTuneCheckpoint.findMany({ where: { jobId: j.id } });
    const steps = checkpoints.map((k) => `${k.type} ${k.step}`);
    if (new Set(steps).size !== steps.length || checkpoints.filter((k) => k.type === 'Final').length !== 1)
      doubled.push(`fine-tune ${j.id}: checkpoints ${steps.join(', ')}`);
    const events = await db.prisma.fineTuneEvent.findMany({ where: { jobId: j.id }, orderBy: { id: 'asc' } });
    const keys = events.map((e) => `${e.type} ${JSON.parse(e.data).step ?? ''}`);
    const repeated = keys.filter((k, i) => keys.indexOf(k) !== i);
    if (repeated.length > 0) doubled.push(`fine-tune ${j.id}: events repeated: ${repeated.join(', ')}`);
    const saved = events.filter((e) => e.type === 'checkpoint_save').length;
    if (j.status === 'completed' && saved !== checkpoints.length - 1)
      doubled.push(`fine-tune ${j.id}: ${saved} checkpoint_save events for ${checkpoints.length - 1} intermediate checkpoints`);
    for (const type of ['job_start', 'training_complete', 'job_complete']) {
      const n = events.filter((e) => e.type === type).length;
      if (j.status === 'completed' && n !== 1) doubled.push(`fine-tune ${j.id}: ${n} ${type} events`);
    }
    const models = await db.prisma.model.count({ where: { source: j.id } });
    if (j.status === 'completed' && models !== 1) doubled.push(`fine-tune ${j.id}: ${models} models in the catalogue`);
  }

  // An evaluation ends completed once, with one result file (row and bytes), and every status recorded once.
  const evaluations = await db.prisma.evaluationJob.findMany({ where: { id: { in: c.evaluations } } });
  await expectAll('evaluation', c.evaluations, evaluations, (e) => e.status === 'completed' && !!e.resultFileId);
  const resultFiles = await db.prisma.file.findMany({ where: { filename: { in: c.evaluations.map((id) => `${id}-results.jsonl`) } } });
  for (const e of evaluations) {
    const mine = resultFiles.filter((f) => f.filename === `${e.id}-results.jsonl`);
    if (e.status === 'completed' && (mine.length !== 1 || mine[0]!.id !== e.resultFileId))
      doubled.push(`evaluation ${e.id}: result files ${mine.map((f) => f.id).join(', ') || 'none'} (job names ${e.resultFileId})`);
    for (const f of mine) if (!existsSync(join(dataDir, f.path))) lost.push(`evaluation ${e.id}: result file ${f.id} has no bytes`);
    const statuses = (JSON.parse(e.statusUpdates) as { status: string }[]).map((u) => u.status);
    if (new Set(statuses).size !== statuses.length) doubled.push(`evaluation ${e.id}: status updates ${statuses.join(', ')}`);
  }
  // A batch ends COMPLETED with every line once, in input order: answered lines in its output file, refused ones in
  // its error file (none lost, none doubled by a chunk run again after the kill).
  const batches = await db.prisma.batch.findMany({ where: { id: { in: c.batches } } });
  await expectAll('batch', c.batches, batches, (b) => b.status === 'COMPLETED' && b.linesDone === BATCH_LINES && b.filesRecorded);
  for (const [trial, id] of c.batches.entries()) {
    const b = batches.find((x) => x.id === id);
    if (b?.status !== 'COMPLETED') continue;
    const ids = (fileId: string) =>
      readFileSync(join(dataDir, 'files', b.projectId, fileId), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).custom_id);
    const all = Array.from({ length: BATCH_LINES }, (_, i) => i);
    const want = (refused: boolean) => all.filter((i) => (i % 7 === 3) === refused).map((i) => `t${trial}-${i}`);
    for (const [what, fileId, expected] of [
      ['output', b.outputFileId, want(false)],
      ['error', b.errorFileId, want(true)],
    ] as const) {
      const got = ids(fileId);
      if (got.join() !== expected.join()) (got.length > expected.length ? doubled : lost).push(`batch ${id}: ${what} lines ${got.join(' ')}`);
      const row = await db.prisma.file.findUnique({ where: { id: fileId } });
      if (!row) lost.push(`batch ${id}: its ${what} file has no row`);
    }
  }
  // No stray bytes: every file on disk under a project's files has its row (a rerun evaluation writes its result anew).
  const rows = new Set((await db.prisma.file.findMany({ select: { path: true } })).map((f) => f.path));
  const filesDir = join(dataDir, 'files');
  if (existsSync(filesDir)) {
    for (const projectDir of readdirSync(filesDir)) {
      for (const name of readdirSync(join(filesDir, projectDir)))
        if (!rows.has(join('files', projectDir, name))) doubled.push(`stray file bytes: files/${projectDir}/${name}`);
    }
  }

  await expectAll(
    'rollout',
    c.rollouts,
    await db.prisma.rollout.findMany({ where: { id: { in: c.rollouts } } }),
    (r) => r.state === 'ROLLOUT_STATE_COMPLETED' && r.currentTrafficPercent === 100,
  );

  // No move applied twice: each machine's entry into a state schedules exactly one timed step.
  const items = await db.prisma.workItem.findMany({ select: { kind: true, subjectId: true, payload: true, state: true } });
  const seen = new Map<string, number>();
  for (const i of items) {
    if (i.kind === 'queue_work' || i.kind === 'queue_claim_timeout') continue;
    const k = `${i.kind} ${i.subjectId} ${i.payload}`;
    seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  for (const [k, n] of seen) if (n > 1) doubled.push(`step scheduled ${n} times: ${k}`);
  for (const i of items) if (i.state === 'failed') doubled.push(`work item given up: ${i.kind} ${i.subjectId}`);
  // A queue job is claimed once, plus once per claim timeout (each returns it to the queue with its own work item).
  for (const j of jobs) {
    const work = items.filter((i) => i.kind === 'queue_work' && i.subjectId === j.id).length;
    if (work !== 1 + j.retries) doubled.push(`queue job ${j.id}: ${work} built-in work items for ${j.retries} retries`);
    const history = JSON.parse(j.info).retry_history ?? [];
    if (history.length !== j.retries) doubled.push(`queue job ${j.id}: ${history.length} retries recorded for ${j.retries}`);
  }
  return { lost, doubled };
}

/** CPU time (user + system) of a process so far, in milliseconds (Linux /proc). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

export interface TwoProcessResult {
  jobs: number;
  processes: number;
  claims: number;
  doubleClaims: number;
  lost: number;
  ms: number;
  jobsPerSecond: number;
  /** CPU the server processes spent per job (submit, claim, complete), in ms: steadier than time on a shared machine. */
  serverCpuMsPerJob: number;
  /** The CPU each server process was capped at, in cores (`cpuCap`), or null: uncapped. */
  cpuCapCores: number | null;
  /** Claims that found nothing waiting (the drivers' polling; each costs the server a request and moves no job). */
  emptyClaims: number;
}

/**
 * `jobs` queue jobs submitted through `processes` server processes on one database, claimed and completed through
 * the worker API by `workersPerProcess` concurrent workers per process, each process driven by its own driver
 * process (test/trials/driver.ts). Every claim is recorded, and counted here. `cpuCap` caps each server process at
 * that many cores (test/support/cpu-cap.ts) where the machine allows it.
 */
export async function queueThroughput(options: {
  databaseUrl: string;
  processes: number;
  jobs: number;
  workersPerProcess?: number;
  batch?: number;
  cpuCap?: number;
  /** Each driver's workers start once its share is submitted (test/trials/driver.ts PHASED). */
  phased?: boolean;
  /** Jobs each process runs before the measurement (a queue of their own; not counted). */
  warmupJobs?: number;
}): Promise<TwoProcessResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'trials-data-'));
  const env = { DATABASE_URL: options.databaseUrl, DATA_DIR: dataDir, RUNNER_POLL_MS: '200' };
  const first = await startServerProcess(env);
  const servers = [first, ...(await Promise.all(Array.from({ length: options.processes - 1 }, () => startServerProcess(env))))];
  const caps = options.cpuCap === undefined ? [] : servers.map((s) => capCpu(s.child.pid!, options.cpuCap!));
  const capped = caps.length > 0 && caps.every(Boolean);
  const key = first.key!;
  const model = `acme/throughput-${Date.now()}`;
  const batch = options.batch ?? 10;
  const claimsOf = new Map<string, number>();
  // One driver process per server (test/trials/driver.ts), started before the clock starts.
  const startDrivers = (queue: string, shareOf: (si: number) => number, tag: string) =>
    Promise.all(
      servers.map(async (s, si) => {
        const out = join(dataDir, `${tag}-${si}.txt`);
        writeFileSync(out, '');
        const child = spawn(process.execPath, ['--import', 'tsx', 'test/trials/driver.ts'], {
          cwd: root,
          env: {
            ...process.env,
            URL: s.url,
            KEY: key,
            MODEL: queue,
            JOBS: String(shareOf(si)),
            WORKERS: String(options.workersPerProcess ?? 4),
            BATCH: String(batch),
            OUT: out,
            NAME: `p${si}`,
            PHASED: options.phased ? '1' : '0',
          },
          stdio: ['pipe', 'pipe', 'inherit'],
        });
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        const stats = { empty: 0 };
        await new Promise<void>((resolve, reject) => {
          child.stdout!.on('data', (d) => {
            const text = String(d);
            const empty = /empty (\d+)/.exec(text);
            if (empty) stats.empty = Number(empty[1]);
            if (text.includes('ready')) resolve();
          });
          void exited.then((code) => reject(new Error(`driver ${si} exited with ${code}`)));
        });
        return { child, out, exited, stats };
      }),
    );
  const run = async (drivers: Awaited<ReturnType<typeof startDrivers>>) => {
    for (const d of drivers) d.child.stdin!.write('go\n');
    const codes = await Promise.all(drivers.map((d) => d.exited));
    if (codes.some((c) => c !== 0)) throw new Error(`a driver failed: exit codes ${codes.join(', ')}`);
  };
  // A warm-up on a queue of its own, outside the measurement: each process compiles its hot paths (V8's JIT, the
  // validator, the database's prepared statements) once, a cost that would otherwise weigh twice as much per job
  // on two processes that each serve half the jobs.
  if (options.warmupJobs) await run(await startDrivers(`${model}-warmup`, () => options.warmupJobs!, 'warmup'));
  const drivers = await startDrivers(model, (si) => Math.floor(options.jobs / servers.length) + (si < options.jobs % servers.length ? 1 : 0), 'claims');
  const cpuBefore = servers.map((s) => cpuMs(s.child.pid!));
  const started = Date.now();
  try {
    await run(drivers);
    for (const d of drivers) for (const id of readFileSync(d.out, 'utf8').split('\n').filter(Boolean)) claimsOf.set(id, (claimsOf.get(id) ?? 0) + 1);
    const ms = Date.now() - started;
    const cpu = servers.reduce((sum, s, i) => sum + cpuMs(s.child.pid!) - cpuBefore[i]!, 0);
    const db = await openDatabase(options.databaseUrl, { migrate: false });
    try {
      const done = await db.prisma.queueJob.count({ where: { model, status: 'done' } });
      const total = await db.prisma.queueJob.count({ where: { model } });
      return {
        jobs: options.jobs,
        processes: options.processes,
        claims: [...claimsOf.values()].reduce((a, b) => a + b, 0),
        doubleClaims: [...claimsOf.values()].filter((n) => n > 1).length,
        lost: options.jobs - done + (total - options.jobs),
        ms,
        jobsPerSecond: Math.round((options.jobs / ms) * 1000 * 10) / 10,
        serverCpuMsPerJob: Math.round((cpu / options.jobs) * 100) / 100,
        cpuCapCores: capped ? options.cpuCap! : null,
        emptyClaims: drivers.reduce((n, d) => n + d.stats.empty, 0),
      };
    } finally {
      await db.close();
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop('SIGTERM')));
    for (const c of caps) c?.release();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
