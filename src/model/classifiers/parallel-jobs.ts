/**
 * The jobs a `ParallelRunner` (../parallel.ts) runs, by name: the worker threads src/train starts look a
 * job up here, so every thread runs the model code itself. A family that spreads its training adds its
 * job here.
 */
import type { ParallelJob } from '../parallel.js';
import { trainShard } from './fasttext/fasttext-sgd.js';
import { fitDualClass } from './members/member-fitting.js';
import { ovrValidationLoss, trainOvrClassEpoch } from './sgd/ovr-sgd.js';

export const PARALLEL_JOBS: Readonly<Record<string, ParallelJob>> = Object.freeze({
  'fasttext-shard': trainShard as ParallelJob,
  'member-dual-class': fitDualClass as ParallelJob,
  'sgd-ovr-epoch': trainOvrClassEpoch as ParallelJob,
  'sgd-ovr-validation': ovrValidationLoss as ParallelJob,
});
