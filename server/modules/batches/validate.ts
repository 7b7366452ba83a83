// VALIDATING: the whole file is read once to count its requests and find repeated `custom_id`s (a repeat is an
// error line when it runs, not a failure of the batch). Only a file that cannot be a batch fails it: gone, empty,
// or over the platform's 50,000 requests.
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Services } from '../types.ts';
import { inputPath, linesFrom } from './input.ts';

export const MAX_REQUESTS = 50_000;

export type Validated = { lines: number; duplicates: number[] } | { error: string };

export async function validateInput(services: Services, row: Batch): Promise<Validated> {
  const path = await inputPath(services, row);
  if (!path) return { error: `The input file '${row.inputFileId}' no longer exists.` };
  const seen = new Set<string>();
  const duplicates: number[] = [];
  let lines = 0;
  for await (const line of linesFrom(path, 0, 1)) {
    if (!line.text.trim()) continue;
    if (++lines > MAX_REQUESTS) return { error: `The input file has more than ${MAX_REQUESTS} requests, the most a batch takes.` };
    const id = customIdOf(line.text);
    if (id === undefined) continue;
    if (seen.has(id)) duplicates.push(line.number);
    else seen.add(id);
  }
  if (lines === 0) return { error: 'The input file has no requests: give one JSON object per line ({"custom_id", "body"}).' };
  return { lines, duplicates };
}

/** A line's `custom_id` when it is a JSON object with a string one. */
export function customIdOf(text: string): string | undefined {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && typeof v.custom_id === 'string' ? v.custom_id : undefined;
  } catch {
    return undefined;
  }
}
