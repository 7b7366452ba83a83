// The chat model of an inference checkpoint: `POST /v1/chat/completions` (and `/v1/completions`) with the model
// name an inference checkpoint registered (`rl/<checkpoint id>`, a model of the project's catalogue) are answered
// by that checkpoint's weights, through its session's engine (the local engine samples its small model; an upstream
// session's checkpoint is asked upstream under its name there).
import type { TextEngine } from '../../engines/chat.ts';
import type { Services } from '../types.ts';
import { bytesOf, engineFor, WITHOUT_BYTES } from './operations.ts';

/** The text engine of the catalogue model `modelId` when it is an inference checkpoint's; null for any other model. */
export async function trainedTextEngine(services: Pick<Services, 'db' | 'engines'>, modelId: string): Promise<TextEngine | null> {
  // Only a project's own models (`ml_...`) can be checkpoints: a catalogue model costs no query here.
  if (!modelId.startsWith('ml_')) return null;
  const c = await services.db.prisma.rlCheckpoint.findFirst({ where: { modelId, kind: 'inference' } });
  if (!c) return null;
  const s = await services.db.prisma.rlSession.findUniqueOrThrow({ where: { id: c.sessionId }, omit: WITHOUT_BYTES });
  const about = `inference checkpoint ${c.id} of RL training session ${s.id} (step ${c.step}; weights seeded by the name ${s.baseModel}, not that model)`;
  return engineFor(services, s).chat(bytesOf(c.bytes), about);
}
