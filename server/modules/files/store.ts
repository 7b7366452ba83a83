// The Files module's API for other modules (evaluations write their result files here; fine-tuning reads its
// datasets): store a file owned by a project, find one, read its content as a stream. Files live on disk under
// DATA_DIR/files/<project>/<id>; the row says what they are.
import { createReadStream, createWriteStream, type ReadStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { File } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Tx } from '../../db/index.ts';
import { enter } from '../../runner/progress.ts';
import type { Services } from '../types.ts';
import { fileMachine } from './machine.ts';
import type { FileType, Purpose } from './rules.ts';

export type { File };
export type StoreServices = Pick<Services, 'db' | 'clock' | 'config'>;

/** A new file id: `file-` and 26 characters that sort by creation time. */
export const newFileId = (nowMs: number) => newId('file', nowMs).replace(/^file_/, 'file-');

/** Where a project's file is kept, relative to DATA_DIR. */
export const fileLocation = (projectId: string, id: string) => join('files', projectId, id);

/** The absolute path of a stored file's bytes. */
export const filePath = (config: Pick<StoreServices['config'], 'dataDir'>, f: Pick<File, 'path'>) => join(config.dataDir, f.path);

export interface NewFile {
  projectId: string;
  filename: string;
  purpose: Purpose;
  fileType: FileType;
}

/**
 * Records a file whose bytes are already at its place (`fileLocation`), in the caller's transaction: a
 * `fine-tune` file starts PENDING and its validation is scheduled; any other is COMPLETED at once.
 */
export async function recordFile(tx: Tx, services: Pick<Services, 'clock' | 'config'>, id: string, input: NewFile, bytes: number): Promise<File> {
  const status = input.purpose === 'fine-tune' ? 'PENDING' : 'COMPLETED';
  const f = await tx.file.create({
    data: { id, projectId: input.projectId, filename: input.filename, purpose: input.purpose, fileType: input.fileType, bytes: BigInt(bytes), path: fileLocation(input.projectId, id), status, createdAt: instant(services.clock) },
  });
  await enter(tx, services, fileMachine, { id, projectId: f.projectId, state: status });
  return f;
}

/** Moves bytes written elsewhere (an upload) to the file's place. */
export async function placeFile(services: StoreServices, projectId: string, id: string, from: string): Promise<void> {
  const to = join(services.config.dataDir, fileLocation(projectId, id));
  await mkdir(dirname(to), { recursive: true });
  await rename(from, to);
}

/**
 * Stores a file owned by a project (e.g. an evaluation's results): the content (a string, bytes or a stream) is
 * written to disk, then the row committed; on failure nothing is left behind. Answers the stored row.
 */
export async function storeFile(services: StoreServices, input: NewFile, content: string | Buffer | Readable | AsyncIterable<string | Buffer>): Promise<File> {
  const id = newFileId(services.clock.now());
  const path = join(services.config.dataDir, fileLocation(input.projectId, id));
  await mkdir(dirname(path), { recursive: true });
  try {
    const source = typeof content === 'string' || Buffer.isBuffer(content) ? Readable.from([content]) : content;
    let bytes = 0;
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<string | Buffer>) {
        for await (const c of chunks) {
          const b = typeof c === 'string' ? Buffer.from(c) : c;
          bytes += b.length;
          yield b;
        }
      },
      createWriteStream(path),
    );
    return await services.db.write((tx) => recordFile(tx, services, id, input, bytes));
  } catch (e) {
    await rm(path, { force: true });
    throw e;
  }
}

/** The project's file, or null (another project's file is absent). */
export function findFile(services: Pick<Services, 'db'>, projectId: string, id: string): Promise<File | null> {
  return services.db.prisma.file.findFirst({ where: { id, projectId } });
}

/** A stored file's content, as a stream. */
export function readFileContent(services: { config: Pick<Services['config'], 'dataDir'> }, f: Pick<File, 'path'>): ReadStream {
  return createReadStream(filePath(services.config, f));
}

/** Deletes a file's row (in the caller's transaction) and then, once committed, its bytes (`removeBytes`). */
export const removeBytes = (services: StoreServices, f: Pick<File, 'path'>) => rm(filePath(services.config, f), { force: true });
