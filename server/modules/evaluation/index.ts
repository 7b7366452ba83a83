// Module `evaluation` (spec/tags/evaluation.yaml): evaluation jobs: the request's rules (rules.ts), the job's machine
// and the runner's steps (machine.ts), the evaluation itself (evaluate.ts, through the judge engines of
// server/engines/judge.ts), and its files in Files (dataset.ts).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { evaluationsSection } from './create.ts';
import { createEvaluationJob, getAllEvaluationJobs, getEvaluationJobDetails, getEvaluationJobStatusAndResults, getModelList } from './handlers.ts';
import { evaluationMachine, evaluationProgression } from './machine.ts';

export const evaluation: ModuleDescriptor<'evaluation'> = {
  name: 'evaluation',
  handlers: { createEvaluationJob, getAllEvaluationJobs, getModelList, getEvaluationJobDetails, getEvaluationJobStatusAndResults },
  machines: [evaluationMachine],
  work: (services) => ({ [evaluationMachine.kind]: progressionWork(evaluationProgression(services), services) }),
  steer: (services) => ({ evaluation: { progression: evaluationProgression(services), creates: [] } }),
  fixtureSections: { evaluations: evaluationsSection },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
