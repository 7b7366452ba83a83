// The tasks the worker threads of the pool (pool.ts) run: nothing here touches the event loop of the process.
import { sample } from 'openapi-sampler';
import { Piscina } from 'piscina';
import { encode, type ImageFormat, type ImageRequest, renderPixels } from './image.ts';
import { SchemaProblem, validatorOf } from './json-schema.ts';
import { beyondSampleBounds, SAMPLE_BOUNDS, sampleTooLong } from './sample-bounds.ts';

type Rgb = [number, number, number];

export interface ImageTask {
  request: Pick<ImageRequest, 'model' | 'prompt' | 'negativePrompt' | 'width' | 'height' | 'steps' | 'guidanceScale'>;
  seed: number;
  colours: Rgb[];
  /** The input image's pixels, when there is one. */
  base?: Uint8Array;
  format: ImageFormat;
}

/** What sampling a caller's schema came to: the sample's JSON, or why there is none. */
export type SchemaOutcome = { json: string } | { problem: 'invalid'; why: string } | { problem: 'beyond'; why: string } | { problem: 'unsatisfied' };

export const tasks = {
  /**
   * One local picture, rendered and encoded (its file, moved back rather than copied): only the file crosses to the
   * event loop's thread, not the pixels (12 MB at 2048x2048, whose churn there cost long garbage collections).
   */
  async image(task: ImageTask): Promise<ArrayBuffer> {
    const base = task.base ? Buffer.from(task.base.buffer, task.base.byteOffset, task.base.byteLength) : undefined;
    const { width, height } = task.request;
    const file = await encode(await renderPixels(task.request as ImageRequest, task.seed, task.colours, base), width, height, task.format);
    const own =
      file.byteOffset === 0 && file.byteLength === file.buffer.byteLength ? file.buffer : file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength);
    return Piscina.move(own as ArrayBuffer) as unknown as ArrayBuffer;
  },

  /**
   * A value valid against a caller's schema (already within the size bounds, sample-bounds.ts): compiled in its draft,
   * its sample bounded before it is made and measured after, then checked.
   */
  schema(task: { schema: object }): SchemaOutcome {
    const { schema } = task;
    let valid: (value: unknown) => boolean;
    try {
      valid = validatorOf(schema);
    } catch (e) {
      if (e instanceof SchemaProblem) return { problem: 'invalid', why: e.message };
      throw e;
    }
    const beyond = beyondSampleBounds(schema);
    if (beyond) return { problem: 'beyond', why: beyond };
    try {
      // The schema is also the document its local `$ref`s (`#/definitions/...`, `#/$defs/...`) point into.
      const value = sample(schema as never, { skipReadOnly: true, quiet: true, maxSampleDepth: SAMPLE_BOUNDS.depth }, schema as never);
      if (sampleTooLong(value)) return { problem: 'beyond', why: `its sample is longer than ${SAMPLE_BOUNDS.bytes.toLocaleString('en-US')} bytes of JSON` };
      return valid(value) ? { json: JSON.stringify(value) } : { problem: 'unsatisfied' };
    } catch {
      return { problem: 'unsatisfied' };
    }
  },
};

// By name, as the pool calls them: the built server's worker entry is this module itself (server/tools/build.ts).
export const { image, schema } = tasks;
