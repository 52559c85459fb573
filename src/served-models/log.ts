/** The logger the service layer writes to: the subset of pino it uses, so tests can capture lines. */
export interface ServiceLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  /** Optional: reloads that change nothing are logged here (once per poll would flood `info`). */
  debug?(obj: object, msg: string): void;
}
