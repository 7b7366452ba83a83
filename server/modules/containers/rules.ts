// A container deployment's request rules: the deployment as it would become (defaults, or the current one, with
// the request's fields over it), its checks (400 naming the field), its references resolved in the caller's
// transaction (volumes mounted, secrets used), and the replicas its autoscaler asks for.
import type { ContainerDeployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { checkNameCharacters } from '../../http/input.ts';
import { queueBacklog, queueName } from '../queue/index.ts';
import { useSecrets } from '../secrets/index.ts';
import type { RequestBody, Wire } from '../types.ts';
import { mountVolumes } from '../volumes/index.ts';

/** This server keeps a record per replica: a deployment has at most this many. */
export const MAX_REPLICAS = 100;

type Create = RequestBody<'createContainerDeployment'>;
export type Autoscaling = Wire<'ContainerHttpAutoscaling'> | Wire<'ContainerQueueAutoscaling'> | Wire<'ContainerCustomMetricAutoscaling'>;

/** The deployment as asked, every field present (references as given: names or ids). */
export type Input = Required<Omit<Create, 'autoscaling'>> & { autoscaling?: Autoscaling };

/** A variable as stored: a plain value or a secret's id (never its value). */
export interface StoredVariable {
  name: string;
  value?: string;
  secretId?: string;
}

/** A mount as stored: the volume's id, where, and the version mounted. */
export interface StoredMount {
  volumeId: string;
  mount_path: string;
  version: number;
}

/** The `spec` column: what a container would run, and the autoscaling. */
export interface Spec {
  gpu_type: Input['gpu_type'];
  gpu_count: number;
  cpu: number;
  memory: number;
  storage: number;
  command: string[];
  args: string[];
  port: number;
  health_check_path: string;
  termination_grace_period_seconds: number;
  autoscaling?: Autoscaling;
  environment_variables: StoredVariable[];
  volumes: StoredMount[];
  /** The image the ready replicas run (a rollout under way runs the row's `image` on its scheduled ones). */
  ready_image?: string;
}

/** Everything but the name (and what follows from the request): the platform's contract names no defaults. */
export function defaults(body: Create): Input {
  const min = body.min_replicas ?? 1;
  return {
    description: '',
    gpu_count: 1,
    cpu: 4,
    memory: 16,
    storage: 100,
    min_replicas: min,
    max_replicas: Math.max(1, min),
    command: [],
    args: [],
    port: 8000,
    health_check_path: '/health',
    termination_grace_period_seconds: 300,
    environment_variables: [],
    volumes: [],
    ...body,
  };
}

/** The deployment's current request, its references by id (ids are accepted as references). */
export function currentInput(d: ContainerDeployment): Input {
  const { ready_image: _, environment_variables, volumes, autoscaling, ...rest } = JSON.parse(d.spec) as Spec;
  return {
    ...rest,
    ...(autoscaling ? { autoscaling } : {}),
    name: d.name,
    description: d.description,
    image: d.image,
    min_replicas: d.minReplicas,
    max_replicas: d.maxReplicas,
    environment_variables: environment_variables.map((v) => (v.secretId ? { name: v.name, value_from_secret: v.secretId } : { name: v.name, value: v.value! })),
    volumes: volumes.map((m) => ({ name: m.volumeId, mount_path: m.mount_path, version: m.version })),
  };
}

const positive = (value: number, param: string, what = 'above 0') => {
  if (!(value > 0)) throw badRequest(`'${param}' must be ${what}.`, param);
};

const RESERVED = new Set(['secrets', 'storage']);
/** What a container's environment takes as a variable's name (as Kubernetes checks it): `A=B` would set `A`. */
const VARIABLE_NAME = /^[A-Za-z_.-][\w.-]*$/;

/** The checks the contract's schema does not make (a refused request changes nothing). */
export function check(input: Input): void {
  checkNameCharacters(input.name, 'name');
  if (!input.name.trim()) throw badRequest("'name' must not be empty.", 'name');
  // `/v1/deployments/secrets...` and `/v1/deployments/storage...` are the Secrets' and storage's paths.
  if (RESERVED.has(input.name))
    throw badRequest(`'${input.name}' cannot name a deployment: /v1/deployments/${input.name} is another resource's path.`, 'name', 'name_reserved');
  if (!input.image.trim()) throw badRequest("'image' must name a container image.", 'image');
  if (/[\s\p{Cc}\p{Cs}]/u.test(input.image))
    throw badRequest(
      "'image' holds white space or a control character: give an image reference such as registry.example.com/team/app:1.2.",
      'image',
      'invalid_image',
    );
  if (!Number.isInteger(input.min_replicas) || input.min_replicas < 0) throw badRequest("'min_replicas' must be 0 or more.", 'min_replicas');
  if (input.max_replicas < 1 || input.max_replicas > MAX_REPLICAS)
    throw badRequest(`'max_replicas' must be from 1 to ${MAX_REPLICAS} (this server's limit per deployment).`, 'max_replicas');
  if (input.max_replicas < input.min_replicas)
    throw badRequest(`'max_replicas' (${input.max_replicas}) must not be below 'min_replicas' (${input.min_replicas}).`, 'max_replicas');
  positive(input.gpu_count, 'gpu_count', '1 or more');
  // The schema's maximum is the hardware catalogue's largest configuration (test/bounds.test.ts compares them).
  positive(input.cpu, 'cpu');
  positive(input.memory, 'memory');
  positive(input.storage, 'storage');
  if (input.termination_grace_period_seconds < 0) throw badRequest("'termination_grace_period_seconds' must be 0 or more.", 'termination_grace_period_seconds');
  const a = input.autoscaling;
  if (a) {
    if (!a.metric)
      throw badRequest(
        "'autoscaling.metric' is required: HTTPTotalRequests, HTTPAvgRequestDuration, QueueBacklogPerWorker or CustomMetric.",
        'autoscaling.metric',
      );
    if (a.target !== undefined) positive(a.target, 'autoscaling.target');
    if (a.metric === 'QueueBacklogPerWorker') {
      if (!('model' in a) || a.model === undefined)
        throw badRequest("'autoscaling.model' names the queue whose backlog scales the deployment.", 'autoscaling.model');
      queueName(a.model, 'autoscaling.model');
    }
  }
  const names = new Set<string>();
  input.environment_variables.forEach((v, i) => {
    const param = `environment_variables.${i}`;
    if (!v.name) throw badRequest(`'${param}.name' must not be empty.`, `${param}.name`);
    if (!VARIABLE_NAME.test(v.name))
      throw badRequest(
        `'${param}.name' is not a variable name: it may hold letters, digits, '_', '-' and '.', and not start with a digit (it holds ${JSON.stringify(v.name.match(/[^\w.-]/)?.[0] ?? v.name[0])}).`,
        `${param}.name`,
        'invalid_variable_name',
      );
    if (names.has(v.name)) throw badRequest(`Variable '${v.name}' is given twice.`, `${param}.name`);
    names.add(v.name);
    if ((v.value === undefined) === (v.value_from_secret === undefined))
      throw badRequest(`Variable '${v.name}' needs exactly one of 'value' and 'value_from_secret'.`, param);
  });
  const paths = new Set<string>();
  input.volumes.forEach((m, i) => {
    const param = `volumes.${i}.mount_path`;
    if (!m.mount_path.startsWith('/')) throw badRequest(`'${param}' must be an absolute path.`, param);
    if (paths.has(m.mount_path)) throw badRequest(`Two volumes are mounted at '${m.mount_path}'.`, param);
    paths.add(m.mount_path);
  });
}

/** Resolves the references (in the deployment's transaction: mounts and secret uses replaced) and answers the stored spec. */
export async function resolve(tx: Tx, projectId: string, deploymentId: string, input: Input): Promise<Spec> {
  const mounts = await mountVolumes(
    tx,
    projectId,
    deploymentId,
    input.volumes.map((m, i) => ({ ref: m.name, version: m.version, param: `volumes.${i}` })),
  );
  const secretRefs = input.environment_variables.flatMap((v, i) =>
    v.value_from_secret === undefined ? [] : [{ ref: v.value_from_secret, param: `environment_variables.${i}.value_from_secret` }],
  );
  const secretIds = await useSecrets(tx, projectId, deploymentId, secretRefs);
  let s = 0;
  const autoscaling = input.autoscaling && { ...input.autoscaling };
  if (autoscaling && 'model' in autoscaling && autoscaling.model !== undefined) autoscaling.model = queueName(autoscaling.model, 'autoscaling.model');
  return {
    gpu_type: input.gpu_type,
    gpu_count: input.gpu_count,
    cpu: input.cpu,
    memory: input.memory,
    storage: input.storage,
    command: input.command,
    args: input.args,
    port: input.port,
    health_check_path: input.health_check_path,
    termination_grace_period_seconds: input.termination_grace_period_seconds,
    ...(autoscaling ? { autoscaling } : {}),
    environment_variables: input.environment_variables.map((v) =>
      v.value_from_secret === undefined ? { name: v.name, value: v.value } : { name: v.name, secretId: secretIds[s++] },
    ),
    volumes: input.volumes.map((m, i) => ({ volumeId: mounts[i]!.volumeId, mount_path: m.mount_path, version: mounts[i]!.version })),
  };
}

/** The fields whose change makes a new revision (what a container would run). */
export function runs(spec: Spec, image: string): string {
  const { autoscaling: _a, ready_image: _r, ...rest } = spec;
  return JSON.stringify({ ...rest, image });
}

/** What the autoscaler asks for, and why (for the log). */
export async function desiredReplicas(
  db: Db | Tx,
  projectId: string,
  d: { minReplicas: number; maxReplicas: number; autoscaling?: Autoscaling },
): Promise<{ replicas: number; why: string }> {
  const a = d.autoscaling;
  const clamp = (n: number) => Math.min(d.maxReplicas, Math.max(d.minReplicas, n));
  if (a?.metric === 'QueueBacklogPerWorker' && 'model' in a && a.model) {
    const backlog = await queueBacklog(db, projectId, a.model);
    const target = a.target ?? 1;
    const replicas = clamp(Math.ceil(backlog / target));
    return { replicas, why: `queue '${a.model}' holds ${backlog} job(s), target ${target} per replica, within ${d.minReplicas}..${d.maxReplicas}` };
  }
  const metric = a?.metric ? `${a.metric} reads 0 here (no traffic reaches a container), so ` : '';
  return { replicas: d.minReplicas, why: `${metric}min_replicas ${d.minReplicas}` };
}

export const autoscalingOf = (d: ContainerDeployment): Autoscaling | undefined => (JSON.parse(d.spec) as Spec).autoscaling;
