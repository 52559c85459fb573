/**
 * The Huffman tree of a hierarchical softmax (`ft_loss: hs`), as fastText builds it: the tags are the
 * leaves, weighted by their training rows, so frequent tags sit near the root; each of the tags − 1 inner
 * nodes has a row in the output matrix, and a tag's probability is the product of the sigmoids of the
 * decisions on its path (`codes`: 1 takes the node's "true" branch).
 */

export interface HuffmanTree {
  /** For each tag (class index), the inner nodes on its path from the root, as output rows 0 … tags − 2. */
  readonly paths: readonly Int32Array[];
  /** For each tag, the decision (0 or 1) taken at each node of its path. */
  readonly codes: readonly Uint8Array[];
}

/**
 * Builds the tree of `counts` (rows per class; ties broken by class index, so it is deterministic). With
 * one class there are no inner nodes and every path is empty.
 */
export function huffmanTree(counts: ArrayLike<number>): HuffmanTree {
  const K = counts.length;
  const nodes = 2 * K - 1;
  const weight = new Float64Array(nodes);
  const parent = new Int32Array(nodes).fill(-1);
  const binary = new Uint8Array(nodes);
  for (let k = 0; k < K; k++) weight[k] = counts[k]!;
  // Leaves sorted by weight (then index); inner nodes are created in non-decreasing weight, so two sorted
  // queues give the two lightest in O(K log K) overall (fastText's buildTree does the same with one array).
  const leaves = Array.from({ length: K }, (_, k) => k).sort((a, b) => weight[a]! - weight[b]! || a - b);
  let leaf = 0;
  let inner = K;
  const lightest = (next: number): number => {
    if (leaf < K && (inner >= next || weight[leaves[leaf]!]! <= weight[inner]!)) return leaves[leaf++]!;
    return inner++;
  };
  for (let node = K; node < nodes; node++) {
    const a = lightest(node);
    const b = lightest(node);
    weight[node] = weight[a]! + weight[b]!;
    parent[a] = node;
    parent[b] = node;
    binary[b] = 1;
  }
  const paths: Int32Array[] = [];
  const codes: Uint8Array[] = [];
  for (let k = 0; k < K; k++) {
    const path: number[] = [];
    const code: number[] = [];
    for (let node = k; parent[node]! !== -1; node = parent[node]!) {
      path.push(parent[node]! - K);
      code.push(binary[node]!);
    }
    paths.push(Int32Array.from(path.reverse()));
    codes.push(Uint8Array.from(code.reverse()));
  }
  return { paths, codes };
}
