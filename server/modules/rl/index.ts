// Module `rl` (spec/tags/rl.yaml): reinforcement learning on the RL engine (server/engines/rl/): model resources,
// training sessions and their operations, each moved by the durable runner (machine.ts, operations.ts), and the
// checkpoints, whose inference ones chat completions serve (chat.ts, offered to the inference module).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import {
  checkCheckpointFileUrl,
  createInferenceCheckpoint,
  createModelResources,
  createTrainingCheckpoint,
  customForwardBackward,
  downloadCheckpoint,
  downloadCheckpointFile,
  estimateModelResourcesCost,
  forward,
  forwardBackward,
  GetSample,
  getCustomForwardBackwardOperation,
  getForwardBackwardOperation,
  getForwardOperation,
  getInferenceCheckpointOperation,
  getModelResources,
  getOptimStepOperation,
  getTrainingCheckpointOperation,
  getTrainingSession,
  getWeightsSyncOperation,
  listModelResources,
  listRlSupportedModels,
  listTrainingSessions,
  OptimStep,
  Sample,
  startTrainingSession,
  stopModelResources,
  stopTrainingSession,
  updateTrainingSession,
  WeightsSync,
} from './handlers.ts';
import { operationMachine, resourcesMachine, sessionMachine } from './machine.ts';
import { operationProgression, resourcesProgression, sessionProgression } from './progressions.ts';

// What this module offers the others: the text engine of an inference checkpoint's chat model (the inference module).
export { trainedTextEngine } from './chat.ts';

export const rl: ModuleDescriptor<'rl'> = {
  name: 'rl',
  handlers: {
    listModelResources,
    createModelResources,
    estimateModelResourcesCost,
    getModelResources,
    stopModelResources,
    listRlSupportedModels,
    listTrainingSessions,
    startTrainingSession,
    getTrainingSession,
    updateTrainingSession,
    stopTrainingSession,
    forward,
    getForwardOperation,
    forwardBackward,
    getForwardBackwardOperation,
    customForwardBackward,
    getCustomForwardBackwardOperation,
    OptimStep,
    getOptimStepOperation,
    WeightsSync,
    getWeightsSyncOperation,
    Sample,
    GetSample,
    createInferenceCheckpoint,
    getInferenceCheckpointOperation,
    createTrainingCheckpoint,
    getTrainingCheckpointOperation,
    downloadCheckpoint,
    downloadCheckpointFile,
  },
  // A checkpoint file's URL is signed: whoever holds it downloads without a key.
  signed: { downloadCheckpointFile: checkCheckpointFileUrl },
  machines: [resourcesMachine, sessionMachine, operationMachine],
  work: (services) => ({
    [resourcesMachine.kind]: progressionWork(resourcesProgression(services), services),
    [sessionMachine.kind]: progressionWork(sessionProgression(services), services),
    [operationMachine.kind]: progressionWork(operationProgression(services), services),
  }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
