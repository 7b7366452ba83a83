// Module `volumes`: rows -> wire shapes (the public platform's VolumeResponseItem).
import type { Volume, VolumeMount, VolumeVersion } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';

/** `shown` is the version whose content is returned (the current one unless a `version` was asked for). */
export function volumeWire(v: Volume, versions: VolumeVersion[], mounts: VolumeMount[], shown: VolumeVersion): Wire<'Volume'> {
  return {
    object: 'volume',
    id: v.id,
    name: v.name,
    type: v.type as 'readOnly',
    current_version: v.currentVersion,
    created_at: iso(v.createdAt),
    updated_at: iso(v.updatedAt),
    mounted_by: [...new Set(mounts.map((m) => m.deploymentId))].sort(),
    version_history: Object.fromEntries(
      versions.map((ver) => [
        String(ver.version),
        {
          version: ver.version,
          content: { type: ver.contentType as 'files', source_prefix: ver.sourcePrefix },
          mounted_by: mounts
            .filter((m) => m.version === ver.version)
            .map((m) => m.deploymentId)
            .sort(),
        },
      ]),
    ),
    content: {
      type: shown.contentType as 'files',
      source_prefix: shown.sourcePrefix,
      files: JSON.parse(shown.files) as { name: string; size: number; last_modified: string }[],
    },
  };
}
