// Rollouts on two server processes sharing one PostgreSQL database (skipped without TEST_DATABASE_URL): both
// runners take the rollouts' step timers, and each step of each rollout is still run exactly once (one split change
// per step and one at completion, one timer per visit of RUNNING). A rollout started through one process and
// paused, resumed, read and promoted through both behaves as on one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, test } from 'vitest';
import { openDatabase } from '../server/db/index.ts';
import { scratchDatabase, usingPostgres } from './support/database.ts';
import { H100, MODEL } from './support/endpoints.ts';
import { startServerProcess } from './support/server-process.ts';

const STEPS = [20, 40, 60, 80, 100];

test.skipIf(!usingPostgres)('two server processes on one PostgreSQL run each step of each rollout once', { timeout: 180_000 }, async () => {
  const scratch = await scratchDatabase('postgresql');
  const dataDir = mkdtempSync(join(tmpdir(), 'rollouts-processes-'));
  const env = { DATABASE_URL: scratch.url, DATA_DIR: dataDir, RUNNER_POLL_MS: '20', RUNNER_LEASE_MS: '2000', DURATION_DEPLOYMENT_PROVISION_MS: '100' };
  const a = await startServerProcess(env);
  const b = await startServerProcess(env);
  const db = await openDatabase(scratch.url, { migrate: false });
  try {
    const key = a.key!;
    const call = async (url: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json: any = await res.json();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const project = (await db.prisma.apiKey.findFirstOrThrow()).projectId;
    const ids: { endpoint: string; rollout: string }[] = [];
    // Three rollouts of short steps, and one of long steps to pause, resume and promote through both processes.
    for (let i = 0; i < 4; i++) {
      const e = await call(a.url, 'POST', `/v2/projects/${project}/endpoints`, { name: `two-${i}` });
      const deployments = [];
      for (const name of ['blue', 'green']) {
        const body = { name, model: MODEL, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 } };
        deployments.push((await call(a.url, 'POST', `/v2/projects/${project}/endpoints/${e.id}/deployments`, body)).id);
      }
      for (
        const until = Date.now() + 30_000;
        (await db.prisma.deployment.count({ where: { id: { in: deployments }, state: 'DEPLOYMENT_STATE_READY' } })) < 2;
      ) {
        if (Date.now() > until) throw new Error('deployments not READY');
        await sleep(50);
      }
      const r = await call(a.url, 'POST', `/v2/projects/${project}/endpoints/${e.id}/rollouts`, {
        sourceDeploymentId: deployments[0],
        targetDeploymentId: deployments[1],
        canary: { steps: STEPS.map((traffic) => ({ traffic })), stepInterval: i === 3 ? '600s' : '0.2s' },
      });
      ids.push({ endpoint: e.id, rollout: r.id });
    }
    // Started through one process; both runners take the timers.
    for (const { endpoint, rollout } of ids) await call(b.url, 'POST', `/v2/projects/${project}/endpoints/${endpoint}/rollouts/${rollout}/start`);
    const slow = ids.pop()!;
    const path = `/v2/projects/${project}/endpoints/${slow.endpoint}/rollouts/${slow.rollout}`;
    expect((await call(a.url, 'POST', `${path}/pause`, { reason: 'two processes' })).state).toBe('ROLLOUT_STATE_PAUSED');
    expect((await call(b.url, 'GET', path)).pauseInfo.reason).toBe('two processes');
    expect((await call(b.url, 'POST', `${path}/resume`, {})).state).toBe('ROLLOUT_STATE_RUNNING');
    expect((await call(a.url, 'POST', `${path}/promote`, {})).state).toBe('ROLLOUT_STATE_COMPLETED');

    for (const until = Date.now() + 60_000; ; ) {
      const done = await db.prisma.rollout.count({ where: { id: { in: ids.map((x) => x.rollout) }, state: 'ROLLOUT_STATE_COMPLETED' } });
      if (done === ids.length) break;
      if (Date.now() > until) throw new Error(`only ${done} of ${ids.length} rollouts completed`);
      await sleep(100);
    }
    for (const { endpoint, rollout } of ids) {
      const steps = await db.prisma.rolloutStep.findMany({ where: { rolloutId: rollout } });
      expect(steps.map((s) => s.state)).toEqual(STEPS.map(() => 'ROLLOUT_STEP_STATE_PASSED'));
      const splits = (await db.prisma.endpointEvent.findMany({ where: { endpointId: endpoint, type: 'endpoint.updated' } })).map((e) => e.message);
      expect(splits).toHaveLength(STEPS.length + 1);
      // One timer per visit of RUNNING (each epoch once), none given up.
      const items = await db.prisma.workItem.findMany({ where: { subjectId: rollout } });
      const keys = items.map((i) => i.payload);
      expect(new Set(keys).size).toBe(keys.length);
      expect(items.every((i) => i.state === 'done')).toBe(true);
    }
  } finally {
    await Promise.all([a.stop('SIGKILL'), b.stop('SIGKILL')]);
    await db.close();
    await scratch.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
