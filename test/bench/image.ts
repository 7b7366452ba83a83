// Image generation time for the local engine (server/engines/image.ts), 1024x1024, one image, as the handler calls
// it, against a baseline measured in the same run: encoding the same finished pixels alone (sharp), so the figure
// separates computing the picture from encoding it. Median of BENCH_ROUNDS (default 5), after one warm-up.
import { encode, type ImageFormat, type ImageRequest, localImageEngine, palette, renderPixels } from '../../server/engines/image.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const base: ImageRequest = {
  model: 'black-forest-labs/FLUX.1-schnell',
  prompt: 'a teal lighthouse at sunset, waves rolling in',
  width: 1024,
  height: 1024,
  steps: 20,
  seed: 42,
  n: 1,
  guidanceScale: 3.5,
  format: 'jpeg',
  references: [],
  safetyCheckerDisabled: false,
  body: {},
};
const cases: [string, Partial<ImageRequest>][] = [
  ['1024x1024 JPEG, 20 steps (the defaults)', {}],
  ['1024x1024 PNG, 20 steps', { format: 'png' }],
  ['1024x1024 WebP, 20 steps', { format: 'webp' }],
  ['1024x1024 JPEG, 50 steps', { steps: 50 }],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const timed = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

export async function benchImage(): Promise<void> {
  for (const [name, change] of cases) {
    const request = { ...base, ...change };
    const pixels = await renderPixels(request, request.seed, palette(request.prompt, undefined, []));
    const encodeOnly = () => encode(pixels, request.width, request.height, request.format as ImageFormat);
    await localImageEngine.generate(request);
    await encodeOnly();
    const whole: number[] = [];
    const encoding: number[] = [];
    const cpu: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const before = process.cpuUsage();
      whole.push(await timed(() => localImageEngine.generate(request)));
      const used = process.cpuUsage(before);
      cpu.push((used.user + used.system) / 1000);
      encoding.push(await timed(encodeOnly));
    }
    const w = median(whole);
    const e = median(encoding);
    console.log(
      `RESULT image ${name}: ${w.toFixed(0)} ms per image, ${median(cpu).toFixed(0)} ms CPU (encoding the same pixels alone ${e.toFixed(0)} ms; picture ${(w - e).toFixed(0)} ms)`,
    );
  }
}
