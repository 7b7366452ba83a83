// An evaluation's files, through the Files module: the input file (a file of the job's project) read a row at a
// time (JSON Lines, or CSV with a header line), and the result file, whose bytes are written by the long step and
// whose row is committed with the job's move.

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parse } from 'csv-parse';
import type { Db, Tx } from '../../db/index.ts';
import { fileLocation, findFile, findFileIn, readFileContent, recordFile, type StoreServices } from '../files/index.ts';

/** Whether the project has that file (another project's file is absent), as `db` sees it (a transaction: a fixture's file). */
export async function inputExists(db: Db | Tx, projectId: string, fileId: string): Promise<boolean> {
  return (await findFileIn(db, projectId, fileId)) !== null;
}

/** What is wrong with an input file: the job ends `user_error` saying so. */
export class InputError extends Error {}

export type Row = Record<string, unknown>;

async function* jsonLines(lines: AsyncIterable<string>): AsyncGenerator<Row> {
  let n = 0;
  for await (const line of lines) {
    n++;
    if (line.trim() === '') continue;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw new InputError(`Line ${n} of the input file is not JSON: the input must be JSON Lines, one object per line.`);
    }
    if (!row || typeof row !== 'object' || Array.isArray(row)) throw new InputError(`Line ${n} of the input file is not a JSON object.`);
    yield row as Row;
  }
}

async function* csvRows(records: AsyncIterable<Row>): AsyncGenerator<Row> {
  try {
    for await (const record of records) yield record;
  } catch (err) {
    throw new InputError(`The input file is not valid CSV: ${(err as Error).message}`);
  }
}

/** The input file's rows, read as a stream; null when the project has no such file (any more). */
export async function inputRows(services: StoreServices, projectId: string, fileId: string): Promise<AsyncIterable<Row> | null> {
  const f = await findFile(services, projectId, fileId);
  if (!f) return null;
  const content = readFileContent(services, f);
  // CSV: the header line names the columns; every value is a string.
  if (f.fileType === 'csv') return csvRows(content.pipe(parse({ columns: true, skip_empty_lines: true, bom: true })));
  return jsonLines(createInterface({ input: content, crlfDelay: Infinity }));
}

/** A result file whose bytes are in place, not yet recorded. */
export interface PlacedFile {
  id: string;
  filename: string;
  bytes: number;
}

/**
 * Writes a job's result file (JSON Lines) where Files keeps the project's files; `recordResultFile` then records it.
 * Its id is the job's own (`eval-X` writes `file-X`): an evaluation run again after a crash overwrites the bytes the
 * first run left unrecorded instead of leaving them behind.
 */
export async function placeResultFile(services: StoreServices, projectId: string, jobId: string, lines: string[]): Promise<PlacedFile> {
  const id = `file-${jobId.replace(/^eval-/, '')}`;
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
