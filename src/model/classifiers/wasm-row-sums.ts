/**
 * Float32 weight rows added into Float64 per-class sums by WebAssembly SIMD (row-sums.wat): two classes'
 * products per instruction where linear-scores.ts's JavaScript does one. The sums are the JavaScript loops'
 * bit for bit (the same products in the same order, no fused multiply-add); member-weights.ts scores with
 * it where a member's weights are Float32 rows of more than four classes, and keeps the JavaScript loops
 * wherever it is missing (`RowSums` null: no WebAssembly SIMD, or the weights past 2 GB).
 *
 * The rows live in the module's own memory (copied there once, when a model is trained or read), and the
 * model's weights are a view of them, so they take no more memory than before; each model has its own
 * memory, freed with it.
 */

/**
 * row-sums.wat compiled (1.6 kB), kept here as bytes so that nothing compiles at install or run time; to
 * change it, edit the .wat and compile it as its header says (wabt from the npm registry, major 1).
 */
const MODULE_BASE64 =
  'AGFzbQEAAAABCQFgBX9/f39/AAISAQZ0YWdnZXIGbWVtb3J5AgABAwIBAAcLAQdhZGRSb3dzAAAK6wsB6AsTBH8BfAN7AX8BewF/AXsBfwF7AX8BewF/AXsBfwF7AX8BewF/AXsCQANAIAVBCGogBEsNASACIAVBAnRqKAIAIQ0gAyAFQQN0aisDAP0UIQ4gAiAFQQJ0aigCBCEPIAMgBUEDdGorAwj9FCEQIAIgBUECdGooAgghESADIAVBA3RqKwMQ/RQhEiACIAVBAnRqKAIMIRMgAyAFQQN0aisDGP0UIRQgAiAFQQJ0aigCECEVIAMgBUEDdGorAyD9FCEWIAIgBUECdGooAhQhFyADIAVBA3RqKwMo/RQhGCACIAVBAnRqKAIYIRkgAyAFQQN0aisDMP0UIRogAiAFQQJ0aigCHCEbIAMgBUEDdGorAzj9FCEcQQAhBgJAA0AgBkEEaiABSw0BIAAgBkEDdGohByAGQQJ0IQggB/0ABAAhCyAH/QAEECEMIA0gCGr9XQMAIQogCyAK/V8gDv3yAf3wASELIAwgDSAIav1dAwj9XyAO/fIB/fABIQwgDyAIav1dAwAhCiALIAr9XyAQ/fIB/fABIQsgDCAPIAhq/V0DCP1fIBD98gH98AEhDCARIAhq/V0DACEKIAsgCv1fIBL98gH98AEhCyAMIBEgCGr9XQMI/V8gEv3yAf3wASEMIBMgCGr9XQMAIQogCyAK/V8gFP3yAf3wASELIAwgEyAIav1dAwj9XyAU/fIB/fABIQwgFSAIav1dAwAhCiALIAr9XyAW/fIB/fABIQsgDCAVIAhq/V0DCP1fIBb98gH98AEhDCAXIAhq/V0DACEKIAsgCv1fIBj98gH98AEhCyAMIBcgCGr9XQMI/V8gGP3yAf3wASEMIBkgCGr9XQMAIQogCyAK/V8gGv3yAf3wASELIAwgGSAIav1dAwj9XyAa/fIB/fABIQwgGyAIav1dAwAhCiALIAr9XyAc/fIB/fABIQsgDCAbIAhq/V0DCP1fIBz98gH98AEhDCAHIAv9CwQAIAcgDP0LBBAgBkEEaiEGDAALCyAGQQJqIAFNBEAgACAGQQN0aiEHIAZBAnQhCCAH/QAEACELIAsgDSAIav1dAwD9XyAO/fIB/fABIQsgCyAPIAhq/V0DAP1fIBD98gH98AEhCyALIBEgCGr9XQMA/V8gEv3yAf3wASELIAsgEyAIav1dAwD9XyAU/fIB/fABIQsgCyAVIAhq/V0DAP1fIBb98gH98AEhCyALIBcgCGr9XQMA/V8gGP3yAf3wASELIAsgGSAIav1dAwD9XyAa/fIB/fABIQsgCyAbIAhq/V0DAP1fIBz98gH98AEhCyAHIAv9CwQAIAZBAmohBgsgBiABSQRAIAAgBkEDdGohByAGQQJ0IQggBysDACEJIAkgDSAIaioCALsgDv0hAKKgIQkgCSAPIAhqKgIAuyAQ/SEAoqAhCSAJIBEgCGoqAgC7IBL9IQCioCEJIAkgEyAIaioCALsgFP0hAKKgIQkgCSAVIAhqKgIAuyAW/SEAoqAhCSAJIBcgCGoqAgC7IBj9IQCioCEJIAkgGSAIaioCALsgGv0hAKKgIQkgCSAbIAhqKgIAuyAc/SEAoqAhCSAHIAk5AwALIAVBCGohBQwACwsCQANAIAUgBE8NASACIAVBAnRqKAIAIQ0gAyAFQQN0aisDAP0UIQ5BACEGAkADQCAGQQRqIAFLDQEgACAGQQN0aiEHIAZBAnQhCCAH/QAEACELIAf9AAQQIQwgDSAIav1dAwAhCiALIAr9XyAO/fIB/fABIQsgDCANIAhq/V0DCP1fIA798gH98AEhDCAHIAv9CwQAIAcgDP0LBBAgBkEEaiEGDAALCyAGQQJqIAFNBEAgACAGQQN0aiEHIAZBAnQhCCAH/QAEACELIAsgDSAIav1dAwD9XyAO/fIB/fABIQsgByAL/QsEACAGQQJqIQYLIAYgAUkEQCAAIAZBA3RqIQcgBkECdCEIIAcrAwAhCSAJIA0gCGoqAgC7IA79IQCioCEJIAcgCTkDAAsgBUEBaiEFDAALCws=';

/** Rows staged between two calls into WebAssembly (a text of more features takes several calls). */
const STAGED = 256;
const PAGE = 65536;
/** Memory above this is left to the JavaScript loops: byte addresses stay positive int32s. */
const MAX_BYTES = 2 ** 31 - PAGE;

type AddRows = (sums: number, K: number, at: number, factor: number, count: number) => void;

/**
 * The part of the WebAssembly global used here: the project's TypeScript libs (ES2023 and Node's types)
 * declare its types but not the global itself.
 */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Memory: new (size: { initial: number; maximum: number }) => { buffer: ArrayBuffer };
  Instance: new (module: object, imports: object) => { exports: { addRows: AddRows } };
}
const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

let compiled: object | null | undefined;

/** The module, compiled once; null where this runtime has no WebAssembly (SIMD). */
function rowSumsModule(): object | null {
  if (compiled === undefined) {
    try {
      compiled = wasm === undefined ? null : new wasm.Module(Buffer.from(MODULE_BASE64, 'base64'));
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/**
 * One model's weight rows in WebAssembly memory and the sums they are added into. A scoring is
 * `begin`, `stage` per row (in the order the products must be added), `flush` before the sums are
 * touched from JavaScript (`sums`), `end`.
 */
export class RowSums {
  /** The rows: row r is rows[r × K, (r + 1) × K). */
  readonly rows: Float32Array;
  /** The running sums of the scoring under way (a view of WebAssembly memory). */
  readonly sums: Float64Array;
  readonly K: number;
  private readonly at: Int32Array;
  private readonly factor: Float64Array;
  private readonly addRows: AddRows;
  private readonly rowsAddress: number;
  private readonly atAddress: number;
  private readonly factorAddress: number;
  private staged = 0;

  private constructor(api: WasmApi, module: object, rows: Float32Array, K: number, pages: number) {
    const memory = new api.Memory({ initial: pages, maximum: pages });
    this.addRows = new api.Instance(module, { tagger: { memory } }).exports.addRows;
    this.K = K;
    const sumsBytes = align16(8 * K);
    this.atAddress = sumsBytes;
    this.factorAddress = this.atAddress + 4 * STAGED;
    this.rowsAddress = this.factorAddress + 8 * STAGED;
    this.sums = new Float64Array(memory.buffer, 0, K);
    this.at = new Int32Array(memory.buffer, this.atAddress, STAGED);
    this.factor = new Float64Array(memory.buffer, this.factorAddress, STAGED);
    this.rows = new Float32Array(memory.buffer, this.rowsAddress, rows.length);
    this.rows.set(rows);
  }

  /**
   * The rows (K classes each) copied into WebAssembly memory, or null where that cannot be done: no
   * WebAssembly SIMD, past 2 GB, or a memory the runtime refuses (its address space reserved up, as under
   * a `ulimit -v`), where the JavaScript loops score the same weights.
   */
  static of(rows: Float32Array, K: number): RowSums | null {
    const module = rowSumsModule();
    const bytes = align16(8 * K) + 12 * STAGED + 4 * rows.length;
    if (wasm === undefined || module === null || K < 1 || bytes > MAX_BYTES) return null;
    try {
      return new RowSums(wasm, module, rows, K, Math.ceil(bytes / PAGE));
    } catch (error) {
      if (error instanceof RangeError) return null;
      throw error;
    }
  }

  /** Starts a scoring from the sums out[0..K). */
  begin(out: Float64Array): void {
    this.sums.set(out.subarray(0, this.K));
    this.staged = 0;
  }

  /** Adds row r times `factor` (when flushed: rows are added in the order they were staged). */
  stage(r: number, factor: number): void {
    const n = this.staged;
    this.at[n] = this.rowsAddress + 4 * this.K * r;
    this.factor[n] = factor;
    this.staged = n + 1;
    if (n + 1 === STAGED) this.flush();
  }

  /** Adds the rows staged so far into `sums`. */
  flush(): void {
    if (this.staged === 0) return;
    this.addRows(0, this.K, this.atAddress, this.factorAddress, this.staged);
    this.staged = 0;
  }

  /** Ends a scoring: the sums into out[0..K). */
  end(out: Float64Array): void {
    this.flush();
    out.set(this.sums);
  }
}

const align16 = (n: number): number => Math.ceil(n / 16) * 16;
