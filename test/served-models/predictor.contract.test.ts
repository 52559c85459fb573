/**
 * The one contract every Predictor keeps (src/served-models/predictor.ts), run over each implementation
 * `predictorFor` picks — plain (TF-IDF), encoder, cascade (single- and multi-label) — with a stand-in
 * encoder provider: the same answers and explanations as the model given every text's embedding, order
 * kept, only the embeddings the model needs asked for, and the encoder's lease held while the model is
 * served and released however a call ends (success, failure, abort).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { EncoderSpec, TagModel } from '../../src/model/index.js';
import {
  type EncoderLease,
  type EncoderProvider,
  type Predictor,
  predictorFor,
  QueueFullError,
} from '../../src/served-models/index.js';
import {
  type CascadeFixture,
  FAKE_PROBES,
  fakeCascade,
  fakeEmbedding,
  fakeMultiLabelCascade,
} from '../support/cascade-fixture.js';

/**
 * A provider of stand-in embeddings that counts the leases held, records what each call embeds, and can
 * fail calls or hold them until released (`gate`), so a call can be aborted while it waits.
 */
class CountingEncoders implements EncoderProvider {
  held = 0;
  readonly calls: string[][] = [];
  failWith: Error | null = null;
  private gates: (() => void)[] = [];
  gate = false;

  async acquire(spec: EncoderSpec): Promise<EncoderLease> {
    this.held += 1;
    let released = false;
    return {
      spec,
      embed: async (texts, call) => {
        this.calls.push([...texts]);
        call?.onStart?.();
        if (this.gate) {
          await new Promise<void>((resolve, reject) => {
            this.gates.push(resolve);
            call?.signal?.addEventListener('abort', () => reject(call.signal!.reason), { once: true });
          });
        }
        if (this.failWith !== null) throw this.failWith;
        return texts.map(fakeEmbedding);
      },
      release: () => {
        if (released) return;
        released = true;
        this.held -= 1;
      },
    };
  }

  open(): void {
    this.gate = false;
    for (const resolve of this.gates.splice(0)) resolve();
  }
}

interface Kind {
  name: string;
  model: TagModel;
  /** The texts whose embeddings it needs of `texts`. */
  needs(texts: readonly string[]): string[];
}

let single: CascadeFixture;
let multi: CascadeFixture;
const kinds: Kind[] = [];

beforeAll(async () => {
  single = fakeCascade();
  multi = await fakeMultiLabelCascade();
  const routedOf = (fixture: CascadeFixture) => (texts: readonly string[]) => {
    const { routed } = fixture.model.predictFast(texts);
    return routed.map((i) => texts[i]!);
  };
  kinds.push(
    { name: 'plain (TF-IDF)', model: single.model.fast, needs: () => [] },
    { name: 'encoder', model: single.model.encoderModel, needs: (texts) => [...texts] },
    { name: 'cascade', model: single.model, needs: routedOf(single) },
    { name: 'multi-label cascade', model: multi.model, needs: routedOf(multi) },
  );
});

/** The texts every case asks about: confident and unsure ones, a duplicate, an empty-looking one. */
const TEXTS = [...FAKE_PROBES, FAKE_PROBES[0]!, '   '];

async function loaded(kind: Kind): Promise<{ predictor: Predictor; encoders: CountingEncoders }> {
  const encoders = new CountingEncoders();
  const lease = kind.model.encoder ? await encoders.acquire(kind.model.encoder) : undefined;
  return { predictor: predictorFor(kind.model, lease, encoders), encoders };
}

const KIND_NAMES = ['plain (TF-IDF)', 'encoder', 'cascade', 'multi-label cascade'] as const;

describe.each(KIND_NAMES)('the Predictor of a %s model', (name) => {
  const kind = () => kinds.find((k) => k.name === name)!;

  it('answers as the model given every text’s embedding, in order, for every probability listing', async () => {
    const { model } = kind();
    const { predictor } = await loaded(kind());
    const embeddings = TEXTS.map(fakeEmbedding);
    for (const probabilities of ['all', 1, 3] as const) {
      const { predictions } = await predictor.predict(TEXTS, { probabilities });
      expect(predictions).toEqual(model.predict(TEXTS, embeddings, { probabilities }));
    }
    const reversed = [...TEXTS].reverse();
    const { predictions: backwards } = await predictor.predict(reversed);
    expect(backwards).toEqual([...(await predictor.predict(TEXTS)).predictions].reverse());
    expect((await predictor.predict([])).predictions).toEqual([]);
  });

  it('explains each text as the model does with its embedding', async () => {
    const { model } = kind();
    const { predictor } = await loaded(kind());
    const answers = await predictor.predict(TEXTS);
    TEXTS.forEach((text, i) => {
      expect(answers.explain(i, 10)).toEqual(model.explain(text, 10, fakeEmbedding(text)));
    });
  });

  it('asks the encoder only for the embeddings the model reads', async () => {
    const { predictor, encoders } = await loaded(kind());
    await predictor.predict(TEXTS);
    const needed = kind().needs(TEXTS);
    expect(encoders.calls.flat()).toEqual(needed);
    if (needed.length === 0) expect(encoders.calls).toEqual([]);
    expect(predictor.encoder).toEqual(kind().model.encoder ?? null);
  });

  it('prepares a model for given texts that answers them as predict does, each distinct text embedded once', async () => {
    const { predictor, encoders } = await loaded(kind());
    const prepared = await predictor.prepare(TEXTS);
    expect(prepared.predict(TEXTS)).toEqual((await predictor.predict(TEXTS)).predictions);
    const embeddedByPrepare = encoders.calls[0] ?? [];
    expect(new Set(embeddedByPrepare).size).toBe(embeddedByPrepare.length);
    expect(new Set(embeddedByPrepare)).toEqual(new Set(kind().needs([...new Set(TEXTS)])));
    TEXTS.forEach((text) => {
      expect(prepared.explain(text, 10)).toEqual(kind().model.explain(text, 10, fakeEmbedding(text)));
    });
  });

  it('holds its encoder’s lease while served and lets it go with release(), once', async () => {
    const { predictor, encoders } = await loaded(kind());
    const holds = kind().model.encoder ? 1 : 0;
    expect(encoders.held).toBe(holds);
    expect(predictor.holdsEncoder).toBe(holds === 1);
    await predictor.predict(TEXTS);
    expect(encoders.held).toBe(holds);
    predictor.release();
    predictor.release();
    expect(encoders.held).toBe(0);
    expect(predictor.holdsEncoder).toBe(false);
  });

  it('after release, a call borrows a lease and gives it back on success, failure and abort', async () => {
    const { predictor, encoders } = await loaded(kind());
    predictor.release();
    const expected = (await loaded(kind())).predictor.predict(TEXTS);
    // Success: the same answers as a served one.
    expect((await predictor.predict(TEXTS)).predictions).toEqual((await expected).predictions);
    expect(encoders.held).toBe(0);
    if (!kind().model.encoder) return;
    // Failure (shed: a cascade would otherwise answer degraded).
    encoders.failWith = new QueueFullError(1, 10, 10);
    await expect(predictor.predict(TEXTS, { overload: 'shed' })).rejects.toBeInstanceOf(QueueFullError);
    expect(encoders.held).toBe(0);
    encoders.failWith = null;
    // Abort while waiting for the embeddings.
    encoders.gate = true;
    const stop = new AbortController();
    const call = predictor.predict(TEXTS, { signal: stop.signal });
    await new Promise((resolve) => setImmediate(resolve));
    expect(encoders.held).toBe(1);
    stop.abort(new Error('the client went away'));
    await expect(call).rejects.toThrow('the client went away');
    expect(encoders.held).toBe(0);
    encoders.open();
  });

  it('rejects an aborted call at once, and tells the observer the model’s time', async () => {
    const { predictor } = await loaded(kind());
    const stop = new AbortController();
    stop.abort(new Error('stopped'));
    let modelNs = 0n;
    let waits = 0;
    const observer = {
      model: (ns: bigint) => {
        modelNs += ns;
      },
      embeddings: () => {
        waits += 1;
      },
    };
    if (kind().needs(TEXTS).length > 0) {
      await expect(predictor.predict(TEXTS, { signal: stop.signal })).rejects.toThrow('stopped');
    }
    await predictor.predict(TEXTS, { observer });
    expect(modelNs).toBeGreaterThan(0n);
    expect(waits).toBe(kind().needs(TEXTS).length > 0 ? 1 : 0);
  });
});

describe('a cascade’s Predictor when its encoder cannot take the unsure texts', () => {
  it('answers them with the fast model marked fast_degraded (degrade), or fails (shed)', async () => {
    const encoders = new CountingEncoders();
    const predictor = predictorFor(single.model, await encoders.acquire(single.model.encoder), encoders);
    encoders.failWith = new QueueFullError(1, 10, 10);
    const reasons: string[] = [];
    const { predictions } = await predictor.predict(TEXTS, {
      observer: { cascadeDegraded: (why) => reasons.push(why) },
    });
    const fast = single.model.predictFast(TEXTS);
    expect(predictions.map((p) => p.stage)).toEqual(
      fast.predictions.map((_, i) => (fast.routed.includes(i) ? 'fast_degraded' : 'fast')),
    );
    expect(predictions.map((p) => p.predicted_tag)).toEqual(fast.predictions.map((p) => p.predicted_tag));
    expect(reasons).toEqual(['queue_full']);
    await expect(predictor.predict(TEXTS, { overload: 'shed' })).rejects.toBeInstanceOf(QueueFullError);
  });

  it('served without its encoder, answers every unsure text degraded and cannot prepare', async () => {
    const predictor = predictorFor(single.model);
    expect(predictor.holdsEncoder).toBe(false);
    const { predictions } = await predictor.predict(single.unsure);
    expect(predictions.every((p) => p.stage === 'fast_degraded')).toBe(true);
    await expect(predictor.prepare(single.unsure)).rejects.toThrow(/without its sentence encoder/);
  });
});
