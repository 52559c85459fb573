/**
 * Telling a person's second stop signal from the copies of one signal that a process group receives.
 *
 * A serving process drains on its first SIGTERM/SIGINT and exits at once on a second one ("I mean it").
 * But one stop often arrives several times: `kill -TERM -- -<pgid>` (systemd's default
 * `KillMode=control-group` signals every process of the unit) and Ctrl-C in a terminal (the foreground
 * process group) reach the server directly *and* through each wrapper above it that forwards signals —
 * npm, `scripts/start.js` (`npm start`), the `--workers` primary — a few milliseconds apart. Counted as a
 * second signal, such a copy cut the drain short.
 *
 * Node does not say who sent a signal (no siginfo), so copies are told apart by time: **the same signal
 * again within `REPEAT_WINDOW_MS` of the first is a copy** (logged, otherwise ignored); a later one, or a
 * different stop signal, is a second signal. Someone who presses Ctrl-C twice within the window is told
 * to send it again. Forwarders (start.js, the cluster primary) apply the same rule, so they pass on a
 * person's second signal but not the group's copies.
 *
 * The module also keeps, per process, whether a stop is under way: the parent watch
 * (`parent-watch.ts`) then takes npm's exit — which follows the group signal — for the end of a stop
 * already in hand rather than a new one.
 */

/** The signals that stop a serving process (SIGHUP reloads instead). */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/**
 * How long after the first stop signal the same signal counts as a copy of it. Forwarding takes a few
 * milliseconds (an idle wrapper's event loop, or the 250 ms parent poll on a busy machine); a person's
 * deliberate second Ctrl-C comes later.
 */
export const REPEAT_WINDOW_MS = 1_000;

/** What a stop signal means: the first one, a copy of the first, or a second one (exit at once). */
export type StopSignalKind = 'first' | 'repeat' | 'second';

/** Stops under way in this process (classifiers that have seen a first signal and are not released). */
let stopsUnderWay = 0;

/** Whether this process has received a stop signal (a drain, or a forwarded stop, is under way). */
export function stopUnderWay(): boolean {
  return stopsUnderWay > 0;
}

/**
 * Classifies the stop signals one process receives, in order.
 * @example const stops = new StopSignalClassifier(); stops.classify('SIGTERM') // 'first'
 */
export class StopSignalClassifier {
  private first: { signal: NodeJS.Signals; at: number } | undefined;
  private counted = false;

  constructor(
    private readonly windowMs: number = REPEAT_WINDOW_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The first stop signal received, if any. */
  get firstSignal(): NodeJS.Signals | undefined {
    return this.first?.signal;
  }

  classify(signal: NodeJS.Signals): StopSignalKind {
    const at = this.now();
    if (this.first === undefined) {
      this.first = { signal, at };
      this.counted = true;
      stopsUnderWay += 1;
      return 'first';
    }
    return signal === this.first.signal && at - this.first.at < this.windowMs ? 'repeat' : 'second';
  }

  /** Forgets this stop for `stopUnderWay()` (a test's listener that is done; the process lives on). */
  release(): void {
    if (!this.counted) return;
    this.counted = false;
    stopsUnderWay -= 1;
  }
}

export interface StopSignalHandlers {
  /** A copy of the first signal (the process group's): worth a log line, nothing more. */
  onRepeat?: (signal: NodeJS.Signals) => void;
  /** A second stop signal: the person wants the process gone now. */
  onSecond: (signal: NodeJS.Signals) => void;
}

export interface StopSignals {
  /** Resolves with the first SIGTERM/SIGINT. */
  readonly first: Promise<NodeJS.Signals>;
  /** Removes the listeners (a stop signal then has its default effect again) and releases the stop. */
  close(): void;
}

/** Listeners of this process that a forwarder may ask to act on a second signal (`forceSecondSignal`). */
const listening = new Set<(signal: NodeJS.Signals) => void>();

/**
 * Listens for SIGTERM/SIGINT for as long as the process serves: the first resolves `first`, copies of it
 * within the window go to `onRepeat`, anything after to `onSecond`. Install it before the port opens, so
 * that no stop signal falls into a gap where Node's default action (sudden death) applies.
 * @example const stops = listenForStopSignals({ onSecond: () => process.exit(1) }); await stops.first;
 */
export function listenForStopSignals(
  handlers: StopSignalHandlers,
  windowMs: number = REPEAT_WINDOW_MS,
): StopSignals {
  const classifier = new StopSignalClassifier(windowMs);
  let resolveFirst!: (signal: NodeJS.Signals) => void;
  const first = new Promise<NodeJS.Signals>((done) => {
    resolveFirst = done;
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    const kind = classifier.classify(signal);
    if (kind === 'first') resolveFirst(signal);
    else if (kind === 'repeat') handlers.onRepeat?.(signal);
    else handlers.onSecond(signal);
  };
  const force = (signal: NodeJS.Signals): void => {
    if (classifier.firstSignal === undefined) onSignal(signal);
    else handlers.onSecond(signal);
  };
  // One listener per signal, bound to its name (a listener is not always given it: `process.emit`).
  const listeners = STOP_SIGNALS.map((signal) => [signal, () => onSignal(signal)] as const);
  for (const [signal, listener] of listeners) process.on(signal, listener);
  listening.add(force);
  return {
    first,
    close: () => {
      for (const [signal, listener] of listeners) process.off(signal, listener);
      listening.delete(force);
      classifier.release();
    },
  };
}

/**
 * Acts on a second stop signal that a forwarder has already classified (the `--workers` primary telling
 * a worker over IPC): a second signal for every listener of this process that has seen a first one, a
 * first one for those that have not. A raised signal would be classified again here, by its own clock.
 */
export function forceSecondSignal(signal: NodeJS.Signals): void {
  for (const force of [...listening]) force(signal);
}
