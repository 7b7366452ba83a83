// Reading the input file: its lines with their byte ends, from a committed offset on, a buffer at a time (a file
// of any size is read in bounded memory, and a chunk reads only what it runs).
import { open } from 'node:fs/promises';
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import { filePath, findFile } from '../files/index.ts';
import type { Services } from '../types.ts';

export interface Line {
  /** 1-based, blank lines included. */
  number: number;
  text: string;
  /** Where the next line starts (bytes). */
  end: number;
}

const READ = 64 * 1024;

/** The batch's input file on disk, or null when it is gone (deleted meanwhile). */
export async function inputPath(services: Pick<Services, 'db' | 'config'>, row: Batch): Promise<string | null> {
  const file = await findFile(services, row.projectId, row.inputFileId);
  return file && filePath(services.config, file);
}

/** The lines from byte `from` (whose first is line `firstNumber`); the last line may lack its newline. */
export async function* linesFrom(path: string, from: number, firstNumber: number): AsyncGenerator<Line> {
  const fh = await open(path, 'r');
  try {
    let position = from;
    let pending = Buffer.alloc(0);
    let start = from;
    let number = firstNumber;
    for (;;) {
      const buf = Buffer.alloc(READ);
      const { bytesRead } = await fh.read(buf, 0, READ, position);
      position += bytesRead;
      let data = bytesRead ? Buffer.concat([pending, buf.subarray(0, bytesRead)]) : pending;
      let nl = data.indexOf(0x0a);
      while (nl >= 0) {
        const end = start + nl + 1;
        yield { number: number++, text: data.subarray(0, nl).toString('utf8').replace(/\r$/, ''), end };
        start = end;
        data = data.subarray(nl + 1);
        nl = data.indexOf(0x0a);
      }
      pending = Buffer.from(data);
      if (bytesRead === 0) {
        if (pending.length) yield { number, text: pending.toString('utf8').replace(/\r$/, ''), end: start + pending.length };
        return;
      }
    }
  } finally {
    await fh.close();
  }
}
