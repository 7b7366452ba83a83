// Endpoints for `npm run bench`'s experiments scenarios (issue 19): a plain v2 endpoint, and one with an A/B
// experiment (two members, 50/50) and a shadow experiment copying every request (uniform rate 1) to a third
// deployment. Made through the API; the bench server runs no runner, so the deployments are marked READY in its
// database, as provisioning would leave them.
import { DEFAULT_PROJECT_SLUG } from '../../server/accounts.ts';
import { openDatabase } from '../../server/db/index.ts';
import type { BenchServer } from './scenarios.ts';

export const PLAIN_ENDPOINT = 'bench-plain';
export const EXPERIMENT_ENDPOINT = 'bench-experiments';
export const plainModel = `${DEFAULT_PROJECT_SLUG}/${PLAIN_ENDPOINT}`;
export const experimentModel = `${DEFAULT_PROJECT_SLUG}/${EXPERIMENT_ENDPOINT}`;

const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';
const CONFIG = 'cr_llama_3_1_8b_h100';

async function call(server: BenchServer, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, { method, headers: server.auth, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** Both endpoints, unless the server has them already (one server, several scenarios). */
export async function seedExperiments(server: BenchServer): Promise<void> {
  const db = await openDatabase(server.database, { migrate: false });
  try {
    const { id: projectId } = await db.prisma.project.findUniqueOrThrow({ where: { slug: DEFAULT_PROJECT_SLUG } });
    if (await db.prisma.dedicatedEndpoint.findFirst({ where: { projectId, name: EXPERIMENT_ENDPOINT } })) return;
    const base = `/v2/projects/${projectId}/endpoints`;
    const endpoint = async (name: string, deployments: number) => {
      const e = await call(server, 'POST', base, { name });
      const ids: string[] = [];
      for (let i = 0; i < deployments; i++) {
        const d = await call(server, 'POST', `${base}/${e.id}/deployments`, {
          name: `d${i}`,
          model: MODEL,
          config: CONFIG,
          autoscaling: { minReplicas: 1, maxReplicas: 1 },
        });
        ids.push(d.id);
      }
      await call(server, 'PATCH', `${base}/${e.id}`, { trafficSplit: [{ deploymentId: ids[0], weight: 1 }] });
      await db.write((tx) => tx.deployment.updateMany({ where: { id: { in: ids } }, data: { state: 'DEPLOYMENT_STATE_READY' } }));
      return { id: e.id as string, ids };
    };
    await endpoint(PLAIN_ENDPOINT, 1);
    const x = await endpoint(EXPERIMENT_ENDPOINT, 3);
    await call(server, 'POST', `${base}/${x.id}/abExperiments`, {
      name: 'bench',
      members: [
        { deploymentId: x.ids[0], role: 'AB_EXPERIMENT_MEMBER_ROLE_CONTROL', percent: 50 },
        { deploymentId: x.ids[1], role: 'AB_EXPERIMENT_MEMBER_ROLE_VARIANT', percent: 50 },
      ],
    });
    await call(server, 'POST', `${base}/${x.id}/shadowExperiments`, {
      name: 'bench',
      source: { endpoint: { sampling: { uniform: { rate: 1 } } } },
      targets: [{ name: 'candidate', targetDeploymentId: x.ids[2] }],
    });
  } finally {
    await db.close();
  }
}
