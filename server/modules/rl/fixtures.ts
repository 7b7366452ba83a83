// Module `rl`: what the auth matrix needs (tests only): the owner's resources, a session on them (RUNNING once the
// runner has taken it), its operations and its checkpoints.
import type { FixtureKit, Fixtures } from '../types.ts';

// biome-ignore lint/suspicious/noExplicitAny: the typed client's paths are checked by the server; fixtures only need ids.
const post = async (kit: FixtureKit, path: string, body: unknown = {}): Promise<any> => {
  const { data, error } = await kit.owner.api.POST(path as never, { body } as never);
  if (!data) throw new Error(JSON.stringify(error));
  return data;
};

const ownersResources = async (kit: FixtureKit) => (await post(kit, '/v1/rl/model-resources', { base_model: 'Qwen/Qwen2.5-7B-Instruct' })).id as string;

/** A RUNNING session of the owner's. */
async function ownersSession(kit: FixtureKit): Promise<string> {
  const session = await post(kit, '/v1/rl/training-sessions', { model_resources_id: await ownersResources(kit) });
  await kit.services.runner.drain();
  return session.id;
}

const TOKENS = [791, 8415, 7731, 389, 279, 5634];
const SAMPLE = { model_input: { chunks: [{ encoded_text: { tokens: TOKENS.slice(0, -1) } }] }, loss_inputs: { target_tokens: { data: TOKENS.slice(1) } } };

const BODIES: Record<string, unknown> = {
  forward: { samples: [SAMPLE] },
  'forward-backward': { samples: [SAMPLE], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } },
  'custom-forward-backward': { samples: [SAMPLE], gradients: [{ data: TOKENS.slice(1).map(() => -1) }] },
  'optim-step': { adam_params: { learning_rate: 0.01 } },
  'weights-sync': { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' },
  sample: { model_inputs: [{ chunks: [{ encoded_text: { tokens: TOKENS.slice(0, 2) } }] }], sampling_params: { max_tokens: 4 } },
  'inference-checkpoint': undefined,
  'training-checkpoint': undefined,
};

/** A request to submit an operation of `kind` to the owner's session. */
const submitting = (kind: string) => async (kit: FixtureKit) => ({ params: { session_id: await ownersSession(kit) }, body: BODIES[kind] });

/** A request to read an operation of `kind` the owner submitted (and the runner ran). */
const reading = (kind: string) => async (kit: FixtureKit) => {
  const session_id = await ownersSession(kit);
  const op = await post(kit, `/v1/rl/training-sessions/${session_id}/operations/${kind}`, BODIES[kind]);
  await kit.services.runner.drain();
  return { params: { session_id, operation_id: op.id } };
};

async function ownersCheckpoint(kit: FixtureKit): Promise<string> {
  const session_id = await ownersSession(kit);
  const op = await post(kit, `/v1/rl/training-sessions/${session_id}/operations/training-checkpoint`);
  await kit.services.runner.drain();
  const { data } = await kit.owner.api.GET('/v1/rl/training-sessions/{session_id}/operations/training-checkpoint/{operation_id}', {
    params: { path: { session_id, operation_id: op.id } },
  });
  return (data!.output as { checkpoint_id: string }).checkpoint_id;
}

export const fixtures: Fixtures<'rl'> = {
  crossProject: {
    getModelResources: async (kit) => ({ params: { model_resources_id: await ownersResources(kit) } }),
    stopModelResources: async (kit) => ({ params: { model_resources_id: await ownersResources(kit) } }),
    startTrainingSession: async (kit) => ({ params: {}, body: { model_resources_id: await ownersResources(kit) } }),
    getTrainingSession: async (kit) => ({ params: { session_id: await ownersSession(kit) } }),
    updateTrainingSession: async (kit) => ({ params: { session_id: await ownersSession(kit) }, body: { display_name: 'renamed' } }),
    stopTrainingSession: async (kit) => ({ params: { session_id: await ownersSession(kit) } }),
    forward: submitting('forward'),
    forwardBackward: submitting('forward-backward'),
    customForwardBackward: submitting('custom-forward-backward'),
    OptimStep: submitting('optim-step'),
    WeightsSync: submitting('weights-sync'),
    Sample: submitting('sample'),
    createInferenceCheckpoint: submitting('inference-checkpoint'),
    createTrainingCheckpoint: submitting('training-checkpoint'),
    getForwardOperation: reading('forward'),
    getForwardBackwardOperation: reading('forward-backward'),
    getCustomForwardBackwardOperation: reading('custom-forward-backward'),
    getOptimStepOperation: reading('optim-step'),
    getWeightsSyncOperation: reading('weights-sync'),
    GetSample: reading('sample'),
    getInferenceCheckpointOperation: reading('inference-checkpoint'),
    getTrainingCheckpointOperation: reading('training-checkpoint'),
    downloadCheckpoint: async (kit) => ({ params: { id: await ownersCheckpoint(kit) }, query: { variant: 'CHECKPOINT_VARIANT_MERGED' } }),
  },
};
