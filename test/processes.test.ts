// The runner-driven states of the platform (uploads, deployments, remediations, evaluations) advance when two server
// processes share one PostgreSQL database, whichever of them is asked, and survive a restart: work accepted by a
// process that then stops is finished by the next one. PostgreSQL only (TEST_DATABASE_URL); SQLite is one process by design.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ScratchDatabase, scratchDatabase, usingPostgres } from './support/database.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

const FAST = {
  RUNNER_POLL_MS: '50',
  RUNNER_LEASE_MS: '2000',
  DURATION_MODEL_UPLOAD_QUEUE_MS: '100',
  DURATION_MODEL_UPLOAD_MS: '300',
  DURATION_REMEDIATION_START_MS: '100',
  DURATION_REMEDIATION_RUN_MS: '300',
  DURATION_DEPLOYMENT_PROVISION_MS: '300',
};

interface Scenario {
  name: string;
  /** Starts the work through one server; returns how to read its state. */
  start(base: string, key: string): Promise<string>;
  /** The current state, read through any server. */
  state(base: string, key: string, id: string): Promise<string>;
  done: string;
}

const json = async (res: Response) => {
  const body = await res.json();
  if (!res.ok) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body as any;
};
const call = (base: string, key: string, path: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...init.headers } }).then(json);

let n = 0;
const scenarios: Scenario[] = [
  {
    name: 'model upload',
    start: async (base, key) =>
      (await call(base, key, '/v1/models', { method: 'POST', body: JSON.stringify({ model_name: `ft-${n++}`, model_source: 'acme/llama-3.1-8b-ft' }) })).data
        .job_id,
    state: async (base, key, id) => (await call(base, key, `/v1/jobs/${id}`)).status,
    done: 'Complete',
  },
  {
    name: 'remediation',
    start: async (base, key) => {
      const [cluster] = (await call(base, key, '/v1/compute/clusters')).clusters;
      const { instances } = await call(base, key, `/v1/compute/clusters/${cluster.cluster_id}/instances`);
      const instance = instances.find((i: any) => i.instance_name === 'gpu-node-1');
      const r = await call(base, key, `/v1/compute/clusters/${cluster.cluster_id}/instances/${instance.instance_id}/remediations`, {
        method: 'POST',
        body: JSON.stringify({ mode: 'REMEDIATION_MODE_REBOOT_VM', reason: 'test' }),
      });
      return `${cluster.cluster_id}/instances/${instance.instance_id}/remediations/${r.id}`;
    },
    state: async (base, key, id) => (await call(base, key, `/v1/compute/clusters/${id}`)).state,
    done: 'SUCCEEDED',
  },
  {
    name: 'deployment',
    start: async (base, key) => {
      const { project_id } = await call(base, key, '/v1/whoami');
      const { endpoint, deployment } = await call(base, key, `/v2/projects/${project_id}/deploy`, {
        method: 'POST',
        body: JSON.stringify({
          endpointName: `svc-${n++}`,
          model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
          config: 'cr_llama_3_1_8b_h100',
          minReplicas: 1,
          maxReplicas: 1,
        }),
      });
      return `/v2/projects/${project_id}/endpoints/${endpoint.id}/deployments/${deployment.id}`;
    },
    state: async (base, key, path) => (await call(base, key, path)).status.state,
    done: 'DEPLOYMENT_STATE_READY',
  },
  {
    name: 'evaluation',
    start: async (base, key) => {
      const form = new FormData();
      form.append('purpose', 'eval');
      form.append('file_name', 'qa.jsonl');
      form.append('file_type', 'jsonl');
      form.append('file', new Blob(['{"question": "q", "response": "yes"}\n']), 'qa.jsonl');
      const file = await json(await fetch(`${base}/v1/files/upload`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form }));
      const judge = { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', model_source: 'serverless', system_template: 'Judge: {{ question }}' };
      const parameters = { judge, labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file.id };
      return (await call(base, key, '/v1/evaluation', { method: 'POST', body: JSON.stringify({ type: 'classify', parameters }) })).workflow_id;
    },
    state: async (base, key, id) => (await call(base, key, `/v1/evaluation/${id}/status`)).status,
    done: 'completed',
  },
];

describe.runIf(usingPostgres)('two server processes on one PostgreSQL database', () => {
  let db: ScratchDatabase;
  let a: ServerProcess;
  let b: ServerProcess;
  let key: string;
  beforeAll(async () => {
    db = await scratchDatabase('postgresql');
    a = await startServerProcess({ DATABASE_URL: db.url, ...FAST });
    b = await startServerProcess({ DATABASE_URL: db.url, ...FAST });
    key = a.key!;
    expect(b.key).toBeUndefined(); // the second process found the defaults the first created
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.drop();
  });

  test.each(scenarios)('$name: started on one, finished by the pair, read on the other', async (s) => {
    const id = await s.start(a.url, key);
    await expect.poll(() => s.state(b.url, key, id), { timeout: 20_000, interval: 100 }).toBe(s.done);
  });

  test.each(scenarios)('$name: survives a restart', async (s) => {
    // Only one process runs work here, and it stops right after accepting.
    await b.stop();
    const id = await s.start(a.url, key);
    expect(await a.stop()).toBe(0);
    b = await startServerProcess({ DATABASE_URL: db.url, ...FAST });
    await expect.poll(() => s.state(b.url, key, id), { timeout: 20_000, interval: 100 }).toBe(s.done);
    a = await startServerProcess({ DATABASE_URL: db.url, ...FAST });
  });
});
