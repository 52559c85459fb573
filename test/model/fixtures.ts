/** A tiny hand-written corpus with three clear topics and one rare tag, for fast training tests. */
import { type Explanation, isVoteExplanation, type LinearTagExplanation } from '../../src/model/index.js';
import type { LabelledText } from '../../src/model/tagger.js';

const topics: Record<string, string[]> = {
  'natural-language-processing': [
    'transformer language model for text generation',
    'sentiment analysis of tweets with bert',
    'named entity recognition in text documents',
    'machine translation with sequence models',
    'question answering over wikipedia text',
    'word embeddings and language understanding',
  ],
  'computer-vision': [
    'object detection in images with yolo',
    'image segmentation using convolutional networks',
    'face recognition from camera images',
    'pose estimation in video frames',
    'image classification on imagenet pixels',
    'generating images with diffusion models',
  ],
  mlops: [
    'deploying models with docker and kubernetes',
    'monitoring model drift in production',
    'feature store and data pipelines for serving',
    'experiment tracking and model registry',
    'continuous training pipeline orchestration',
    'serving predictions behind a rest api',
  ],
};

export const TRAIN: LabelledText[] = [
  ...Object.entries(topics).flatMap(([tag, texts]) => texts.map((text) => ({ text, tag }))),
  { text: 'reinforcement learning agent plays games', tag: 'reinforcement-learning' },
];

export const VALIDATION: LabelledText[] = [
  { text: 'text classification with language models', tag: 'natural-language-processing' },
  { text: 'detecting objects in camera images', tag: 'computer-vision' },
  { text: 'model serving with kubernetes in production', tag: 'mlops' },
  { text: 'a survey of graph learning', tag: 'graph-learning' },
];

/**
 * The SGD model the defaults were before the soft vote (issue 25): tests of the SGD path pin it, since the
 * default classifier is now `soft_vote` (which ignores num_epochs, alpha, … and reports one loss).
 */
export const SGD = { classifier: 'ovr', oversample: true } as const;

/** An explanation of one linear score (SGD, or a lone member classifier); throws for a vote's. */
export function linearExplanation(explanation: Explanation): LinearTagExplanation {
  if (isVoteExplanation(explanation)) {
    throw new Error(`expected one linear score's explanation, got a vote's (tag ${explanation.tag})`);
  }
  return explanation;
}
