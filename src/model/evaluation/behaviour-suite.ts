/**
 * The default behaviour suite, written for the tags of Made With ML's dataset.csv
 * (natural-language-processing, computer-vision, mlops, other). The first three mft cases and the
 * "disrupted" one are tagifai's own (tests/model/test_behavioral.py); the rest follow CheckList's
 * templates. On data with other tags, the cases naming a tag the model lacks are skipped, and on data
 * with none of these tags but `other` (which every model has) the suite is not run at all; pass your own
 * suite with `tagger train --behaviour <file>`.
 */
import type { BehaviourCase, BehaviourSuite } from './behaviour.js';

const NLP = 'natural-language-processing';
const CV = 'computer-vision';
const MLOPS = 'mlops';
const OTHER = 'other';

const mft = (name: string, text: string, expected: string): BehaviourCase => ({
  kind: 'mft',
  name,
  text,
  expected,
});

const inv = (name: string, text: string, perturbation: 'typos' | 'names' | 'casing' | 'punctuation') =>
  ({ kind: 'inv', name, text, perturbation, variants: 3 }) as const satisfies BehaviourCase;

const dir = (name: string, text: string, add: string, tag: string, expect: 'increase' | 'predicted') =>
  ({ kind: 'dir', name, text, add, tag, expect }) as const satisfies BehaviourCase;

/** Texts that lean to no tag, to which the directional cases add a domain phrase. */
const NEUTRAL = {
  approach: 'A new approach to learning good representations.',
  library: 'An open-source library with tutorials and examples.',
  benchmark: 'We compare several deep learning methods on a benchmark.',
};

export const DEFAULT_BEHAVIOUR_SUITE: BehaviourSuite = {
  name: 'default (dataset.csv tags)',
  about: `written for a model of Made With ML's dataset.csv: its cases expect that file's tags (${[CV, MLOPS, NLP, OTHER].join(', ')})`,
  seed: 42,
  cases: [
    mft('nlp next big wave', 'Natural language processing is the next big wave in machine learning.', NLP),
    mft('mlops next big wave', 'MLOps is the next big wave in machine learning.', MLOPS),
    mft('graph neural networks', 'This is about graph neural networks.', OTHER),
    mft('transformers disrupted nlp', 'Transformers applied to NLP have disrupted machine learning.', NLP),
    mft('text classification', 'ML applied to text classification.', NLP),
    mft('image classification', 'ML applied to image classification.', CV),
    mft('cnns for text', 'CNNs for text classification.', NLP),
    mft('sentiment with bert', 'Sentiment analysis of movie reviews with BERT.', NLP),
    mft('machine translation', 'Machine translation with sequence-to-sequence models.', NLP),
    mft('object detection', 'Real-time object detection in video with YOLO.', CV),
    mft('segmentation', 'Semantic segmentation of street scenes with a fully convolutional network.', CV),
    mft('face recognition', 'Face recognition from camera images.', CV),
    mft('kubernetes deployment', 'Deploying machine learning models with Docker and Kubernetes.', MLOPS),
    mft('drift monitoring', 'Monitoring data drift of models in production.', MLOPS),
    mft('experiment tracking', 'Experiment tracking and a model registry for reproducible pipelines.', MLOPS),
    mft('reinforcement learning', 'A reinforcement learning agent that learns to play Atari games.', OTHER),
    inv('typos: transformers', 'Transformers applied to NLP have revolutionized machine learning.', 'typos'),
    inv('typos: convolutional networks', 'Convolutional neural networks for image classification.', 'typos'),
    inv(
      'typos: serving',
      'Serving machine learning models in production with monitoring and alerts.',
      'typos',
    ),
    inv('names: entity recognition', "Alice's tutorial on named entity recognition with spaCy.", 'names'),
    inv('names: object detector', 'A YOLO object detector for drones, built by John and Priya.', 'names'),
    inv(
      'names: data versioning',
      'Maria explains how to version data and models with DVC in production.',
      'names',
    ),
    inv('casing: summarization', 'Text summarization with pretrained language models.', 'casing'),
    inv('casing: pose estimation', 'Human pose estimation from images and video.', 'casing'),
    inv('casing: ci/cd', 'Continuous integration and deployment for machine learning models.', 'casing'),
    inv('punctuation: question answering', 'Question answering over Wikipedia, with BERT.', 'punctuation'),
    inv(
      'punctuation: image generation',
      'Generating images with diffusion models, step by step.',
      'punctuation',
    ),
    dir('approach + transformer', NEUTRAL.approach, 'transformer', NLP, 'increase'),
    dir('approach + image', NEUTRAL.approach, 'image', CV, 'increase'),
    dir('approach + mlops', NEUTRAL.approach, 'mlops', MLOPS, 'increase'),
    dir('library + text', NEUTRAL.library, 'for text classification and language models', NLP, 'predicted'),
    dir('library + images', NEUTRAL.library, 'for image segmentation and object detection', CV, 'predicted'),
    dir(
      'library + deployment',
      NEUTRAL.library,
      'for deploying and monitoring models in production',
      MLOPS,
      'predicted',
    ),
    dir('benchmark + transformer', NEUTRAL.benchmark, 'transformer', NLP, 'increase'),
    dir('benchmark + image', NEUTRAL.benchmark, 'image', CV, 'increase'),
    dir('benchmark + mlops', NEUTRAL.benchmark, 'mlops', MLOPS, 'increase'),
  ],
};
