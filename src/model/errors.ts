/** Errors thrown by src/model: bad caller input vs. a model artifact that cannot be decoded. */

/** Invalid arguments or data handed to the model code (bad training args, empty data, ...). */
export class ModelInputError extends Error {
  override name = 'ModelInputError';
}

/** A saved model that cannot be loaded: missing file, unsupported format, corrupt or truncated data. */
export class ModelFormatError extends Error {
  override name = 'ModelFormatError';
}
