// A container deployment's log: one row per thing this server did for it (never container output), written in the
// transaction that did it.
import type { ContainerDeployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, iso } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import { insertRows, type Tx } from '../../db/index.ts';

/** A replica's id: the deployment, the revision it runs, its number (from 1). */
export const replicaId = (deploymentId: string, revision: number, n: number) => `${deploymentId}-r${revision}-${n}`;

export interface Line {
  /** `deployment`, or the replica id the line is about. */
  source?: string;
  text: string;
  /** Default: the deployment's current revision. */
  revision?: number;
}

export async function writeLog(tx: Tx, clock: Clock, d: Pick<ContainerDeployment, 'id' | 'projectId' | 'revision'>, lines: Line[]): Promise<void> {
  if (!lines.length) return;
  const now = clock.now();
  await insertRows(
    tx,
    'ContainerDeploymentLog',
    lines.map((l) => ({
      id: newId('dlog', now),
      projectId: d.projectId,
      deploymentId: d.id,
      revision: l.revision ?? d.revision,
      source: l.source ?? 'deployment',
      at: BigInt(now),
      text: l.text,
    })),
  );
}

/** A stored line as the logs answer it. */
export const logLine = (l: { at: bigint; source: string; text: string }) => `${iso(l.at)} [${l.source}] ${l.text}`;
