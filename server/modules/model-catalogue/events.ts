// A remote upload's events: its creation and every move of its machine, in order (ids are monotonic).
import type { RemoteUpload } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Tx } from '../../db/index.ts';

export async function recordEvent(tx: Tx, clock: Clock, u: RemoteUpload, type: string, level: string, message: string): Promise<void> {
  await tx.remoteUploadEvent.create({
    data: { id: newId('mue', clock.now()), uploadId: u.id, projectId: u.projectId, level, type, message, createdAt: instant(clock) },
  });
}
