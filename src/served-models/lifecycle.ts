/**
 * Whether the process still takes new work. The server flips it when a graceful shutdown starts, and the
 * readiness endpoint reads it, so a load balancer stops routing here while in-flight requests finish.
 */
export class ServingLifecycle {
  private drainingSince: number | null = null;

  /** True once a graceful shutdown has started (new connections are refused, in-flight ones finish). */
  get draining(): boolean {
    return this.drainingSince !== null;
  }

  /** Ready for new requests: false from the start of a shutdown on (there is no way back). */
  get ready(): boolean {
    return this.drainingSince === null;
  }

  /** Marks the start of the drain; later calls keep the first time. */
  beginDrain(now = Date.now()): void {
    this.drainingSince ??= now;
  }
}
