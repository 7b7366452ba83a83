// Module `inference` (spec/tags/inference.yaml): chat completions and completions on dedicated endpoints and
// serverless models.
import type { ModuleDescriptor } from '../types.ts';
import { createChatCompletion, createCompletion } from './handlers.ts';

// What this module offers the others.
export { infer as answerText, type TextCall } from './handlers.ts';
export { resolveTarget } from './targets.ts';

export const inference: ModuleDescriptor<'inference'> = {
  name: 'inference',
  handlers: { createChatCompletion, createCompletion },
};
