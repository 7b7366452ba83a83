// A fixtures document's files (the Control tag's applyFixtures): the bytes written to their place first (a file's row
// may only point at bytes that are there), removed again by the control plane if the document does not commit.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { idTaken } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { FixtureSection } from '../types.ts';
import { checkPurpose, type FileType } from './rules.ts';
import { fileLocation, recordFile } from './store.ts';

export const filesSection: FixtureSection<'files'> = {
  order: 3,
  async fill({ tx, services, project, written }, file) {
    const fileId = file.id ?? newId('file', services.clock.now()).replace(/^file_/, 'file-');
    if (file.id && (await tx.file.findUnique({ where: { id: file.id } }))) throw idTaken('file', file.id, 'id');
    const fileType = (file.file_type ?? 'jsonl') as FileType;
    checkPurpose(file.purpose, fileType);
    const path = join(services.config.dataDir, fileLocation(project.id, fileId));
    await mkdir(dirname(path), { recursive: true });
    written.push(path);
    const bytes = Buffer.from(file.content);
    await writeFile(path, bytes);
    await recordFile(tx, services, fileId, { projectId: project.id, filename: file.filename, purpose: file.purpose, fileType }, bytes.length);
    return { ids: { files: [fileId] } };
  },
};
