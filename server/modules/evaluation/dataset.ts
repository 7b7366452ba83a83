// An evaluation's files, through the Files module: the input file (a file of the job's project) read a line at a
// time, and the result file, whose bytes are written by the long step and whose row is committed with the job's move.
import { createInterface } from 'node:readline';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Tx } from '../../db/index.ts';
import { findFile, readFileContent } from '../files/index.ts';
import { fileLocation, newFileId, recordFile, type StoreServices } from '../files/store.ts';

/** Whether the project has that file (another project's file is absent). */
export async function inputExists(services: Pick<StoreServices, 'db'>, projectId: string, fileId: string): Promise<boolean> {
  return (await findFile(services, projectId, fileId)) !== null;
}

/** The input file's lines, read as a stream; null when the project has no such file (any more). */
export async function inputLines(services: StoreServices, projectId: string, fileId: string): Promise<AsyncIterable<string> | null> {
  const f = await findFile(services, projectId, fileId);
  if (!f) return null;
  return createInterface({ input: readFileContent(services, f), crlfDelay: Infinity });
}

/** A result file whose bytes are in place, not yet recorded. */
export interface PlacedFile {
  id: string;
  filename: string;
  bytes: number;
}

/** Writes a job's result file (JSON Lines) where Files keeps the project's files; `recordResultFile` then records it. */
export async function placeResultFile(services: StoreServices, projectId: string, jobId: string, lines: string[]): Promise<PlacedFile> {
  const id = newFileId(services.clock.now());
  const path = join(services.config.dataDir, fileLocation(projectId, id));
  await mkdir(dirname(path), { recursive: true });
  const content = lines.map((l) => `${l}\n`).join('');
  await writeFile(path, content);
  return { id, filename: `${jobId}-results.jsonl`, bytes: Buffer.byteLength(content) };
}

/** Records a placed result file in the caller's transaction (with the job's move). */
export async function recordResultFile(tx: Tx, services: StoreServices, projectId: string, placed: PlacedFile): Promise<void> {
  await recordFile(tx, services, placed.id, { projectId, filename: placed.filename, purpose: 'eval', fileType: 'jsonl' }, placed.bytes);
}
