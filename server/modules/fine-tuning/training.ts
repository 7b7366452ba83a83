// The local engine's training simulation: deterministic, computed from the real dataset. It does not train a model:
// it plans the run the platform would make (batches of the dataset's samples, epochs, evaluations, checkpoints),
// counts the tokens each step processes (the samples as the server's tokenizer counts them, cut to
// max_seq_length), and draws train and validation loss curves whose shape follows the dataset (sample lengths and
// count set the starting loss, the floor and how fast it is reached; the validation set's difference from the
// training set sets the gap; several epochs over a small set overfit), with noise seeded by the dataset's content
// and `random_seed`. Early stopping (earlyStop) reads the validation curve exactly as the requirements define it.
import { createHash } from 'node:crypto';

/** A dataset as training sees it: each sample's tokens (already cut to max_seq_length), and a digest of its content. */
export interface Dataset {
  tokens: number[];
  digest: string;
}

export interface Schedule {
  learningRate: number;
  warmupRatio: number;
  scheduler: { type: 'linear' | 'cosine'; minLrRatio: number; numCycles: number };
}

export interface Plan {
  batchSize: number;
  stepsPerEpoch: number;
  totalSteps: number;
  /** The steps after which the validation set is evaluated (n_evals of them, evenly spaced, the last at the end). */
  evalSteps: number[];
  /** The steps at which a checkpoint is saved (n_checkpoints, evenly spaced, the last at the end). */
  checkpointSteps: number[];
}

/** Loss per step (index 0 is step 1) and per evaluation (in evalSteps order). */
export interface Curves {
  train: number[];
  eval: number[];
}

export function plan(samples: number, batchSize: number, epochs: number, nEvals: number, nCheckpoints: number): Plan {
  const stepsPerEpoch = Math.max(1, Math.ceil(samples / batchSize));
  const totalSteps = stepsPerEpoch * epochs;
  const spaced = (n: number) => [...new Set(Array.from({ length: n }, (_, i) => Math.max(1, Math.round((totalSteps * (i + 1)) / n))))];
  return { batchSize, stepsPerEpoch, totalSteps, evalSteps: nEvals > 0 ? spaced(nEvals) : [], checkpointSteps: spaced(Math.max(1, nCheckpoints)) };
}

/** Steps between evaluations, as planned (the first evaluation's step): what the run was set to, wherever it ended. */
export const evalInterval = (p: Plan): number | undefined => p.evalSteps[0];

/**
 * The tokens step `step` (1-based) processes: its batch of samples, in dataset order, epoch after epoch. Packed, the
 * samples' own tokens; without packing, each sample padded to the batch's longest, the padding processed too.
 */
export function stepTokens(train: Dataset, p: Plan, step: number, packing = true): number {
  const start = ((step - 1) % p.stepsPerEpoch) * p.batchSize;
  const batch = train.tokens.slice(start, Math.min(start + p.batchSize, train.tokens.length));
  return packing ? batch.reduce((a, b) => a + b, 0) : batch.length * Math.max(0, ...batch);
}

/** The tokens a whole run processes: every step's batch, and the validation set at each evaluation (what an estimate prices). */
export function runTokens(train: Dataset, validation: Dataset | null, p: Plan, packing: boolean): { train: number; eval: number } {
  let tokens = 0;
  for (let step = 1; step <= p.totalSteps; step++) tokens += stepTokens(train, p, step, packing);
  const perEval = validation ? validation.tokens.reduce((a, b) => a + b, 0) : 0;
  return { train: tokens, eval: perEval * p.evalSteps.length };
}

/** The learning rate at `step`: linear warmup over warmup_ratio of the steps, then the scheduler's decay. */
export function learningRateAt(s: Schedule, p: Plan, step: number): number {
  const warmup = Math.round(s.warmupRatio * p.totalSteps);
  if (step <= warmup) return (s.learningRate * step) / warmup;
  const q = p.totalSteps === warmup ? 1 : (step - warmup) / (p.totalSteps - warmup);
  const { minLrRatio: min, numCycles } = s.scheduler;
  const shape = s.scheduler.type === 'linear' ? 1 - q : 0.5 * (1 + Math.cos(2 * Math.PI * numCycles * q));
  return s.learningRate * (min + (1 - min) * shape);
}

/** A deterministic stream of numbers in [0, 1) from a seed string. */
function noise(seed: string): (i: number) => number {
  return (i) => createHash('sha256').update(`${seed}:${i}`).digest().readUInt32BE(0) / 2 ** 32;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** The loss curves of a run over `train` (and `validation`), as the simulation draws them. */
export function simulateCurves(train: Dataset, validation: Dataset | null, p: Plan, s: Schedule, seed: number | null): Curves {
  const meanTrain = mean(train.tokens);
  const start = 0.8 + 0.35 * Math.log(1 + meanTrain);
  const floor = start * (0.25 + 0.5 / Math.sqrt(1 + train.tokens.length));
  // How fast the floor is reached, relative to the default rate 1e-5: as its square root below it, logarithmically
  // above it (diminishing returns), so every rate draws its own curve and a higher one always falls faster.
  const relative = s.learningRate / 1e-5;
  const rate = relative <= 1 ? 2 + 3 * Math.sqrt(relative) : 5 + 1.5 * Math.log(relative);
  const jitter = noise(`${train.digest}:${seed ?? ''}`);
  const trainLoss = (step: number) => floor + (start - floor) * Math.exp((-rate * step) / p.stepsPerEpoch);
  const curve = Array.from({ length: p.totalSteps }, (_, i) => trainLoss(i + 1) + 0.03 * start * (jitter(i) - 0.5));
  if (!validation) return { train: curve, eval: [] };
  const shift = Math.abs(mean(validation.tokens) - meanTrain) / Math.max(1, meanTrain);
  const gap = floor * (0.1 + 0.2 * Math.min(1, shift));
  const overfit = (0.3 * start) / Math.sqrt(train.tokens.length);
  const evalJitter = noise(`${validation.digest}:${seed ?? ''}:eval`);
  const evalLoss = p.evalSteps.map((step, i) => {
    const epochs = step / p.stepsPerEpoch;
    return trainLoss(step) + gap + overfit * Math.max(0, epochs - 1) ** 2 + 0.01 * start * (evalJitter(i) - 0.5);
  });
  return { train: curve, eval: evalLoss };
}

export interface EarlyStopping {
  patience: number;
  minDelta: number;
  warmupEvals: number;
}

export interface EarlyStopOutcome {
  stopped: boolean;
  /** The step training ends at: the halt step when stopped, else the last step. */
  endStep: number;
  /** The step of the selected artifact: the best evaluation's, or the end step when no evaluation improved. */
  bestStep: number;
  /** The best validation loss among improving evaluations; null when none improved. */
  bestMetric: number | null;
}

/**
 * Early stopping over the evaluations (step and validation loss, in order), as the requirements define it:
 * - the first `warmupEvals` evaluations are not considered;
 * - the next one sets the reference (it is not an improvement: nothing came before it to improve on);
 * - each later evaluation improves when its loss is below the best so far by more than `minDelta` (the best is then
 *   it: `bestMetric`, `bestStep`); otherwise it is one more evaluation without improvement;
 * - `patience` evaluations in a row without improvement halt training at that evaluation's step.
 * Hence enabling it needs n_evals >= patience + warmup_evals + 1. When no evaluation improved, `bestMetric` is
 * null and `bestStep` is the halt step (or the last step, when it never halted).
 */
export function earlyStop(evals: { step: number; loss: number }[], rule: EarlyStopping, lastStep: number): EarlyStopOutcome {
  let reference: number | undefined;
  let bestMetric: number | null = null;
  let bestStep: number | undefined;
  let without = 0;
  for (const [i, e] of evals.entries()) {
    if (i < rule.warmupEvals) continue;
    if (reference === undefined) {
      reference = e.loss;
      continue;
    }
    if (e.loss < reference - rule.minDelta) {
      reference = e.loss;
      bestMetric = e.loss;
      bestStep = e.step;
      without = 0;
    } else if (++without >= rule.patience) {
      return { stopped: true, endStep: e.step, bestStep: bestStep ?? e.step, bestMetric };
    }
  }
  return { stopped: false, endStep: lastStep, bestStep: bestStep ?? lastStep, bestMetric };
}
