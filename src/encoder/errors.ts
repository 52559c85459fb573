/** Every problem with an encoder (its files, its identity, its runtime) is one of these: one clear line. */
export class EncoderError extends Error {
  override readonly name = 'EncoderError';
}
