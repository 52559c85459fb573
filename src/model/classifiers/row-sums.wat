;; The rows of Float32 weights added into per-class Float64 sums (src/model/classifiers/wasm-row-sums.ts):
;;   sums[k] += f64(row_i[k]) * factor_i, for every row i in order, for every class k < K.
;; Each class's sum takes the same products (an f32 weight promoted to f64 exactly, times an f64) in the same
;; order as linear-scores.ts's JavaScript loops, rounded the same way (WebAssembly never fuses a multiply
;; and an add), so the sums are the same bit for bit; SIMD only does two classes per instruction.
;; Runs of eight rows as linear-scores.ts's addFullRun: each class's sum read once a run, the eight rows read
;; side by side.
;; The bytes in wasm-row-sums.ts are this file compiled:
;;   npx --yes --package=wabt@1 -- wat2wasm src/model/classifiers/row-sums.wat -o /tmp/row-sums.wasm
;;   base64 -w0 /tmp/row-sums.wasm
(module
  (memory (import "tagger" "memory") 1)

  ;; Adds `count` rows into sums[0..K) (f64 at byte address `sums`): row i starts at the byte address
  ;; at[i] (i32s from byte address `at`) and is multiplied by factor[i] (f64s from byte address `factor`).
  (func (export "addRows") (param $sums i32) (param $K i32) (param $at i32) (param $factor i32) (param $count i32)
    (local $i i32) (local $k i32) (local $s i32) (local $w i32) (local $t f64)
    (local $x v128) (local $lo v128) (local $hi v128)
    (local $a0 i32) (local $v0 v128)
    (local $a1 i32) (local $v1 v128)
    (local $a2 i32) (local $v2 v128)
    (local $a3 i32) (local $v3 v128)
    (local $a4 i32) (local $v4 v128)
    (local $a5 i32) (local $v5 v128)
    (local $a6 i32) (local $v6 v128)
    (local $a7 i32) (local $v7 v128)
    (block $runs_done
      (loop $runs
        (br_if $runs_done (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (local.get $count)))
        (local.set $a0 (i32.load offset=0 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v0 (f64x2.splat (f64.load offset=0 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $a1 (i32.load offset=4 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v1 (f64x2.splat (f64.load offset=8 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $a2 (i32.load offset=8 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v2 (f64x2.splat (f64.load offset=16 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $a3 (i32.load offset=12 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v3 (f64x2.splat (f64.load offset=24 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $a4 (i32.load offset=16 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v4 (f64x2.splat (f64.load offset=32 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $a5 (i32.load offset=20 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v5 (f64x2.splat (f64.load offset=40 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $a6 (i32.load offset=24 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v6 (f64x2.splat (f64.load offset=48 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $a7 (i32.load offset=28 (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v7 (f64x2.splat (f64.load offset=56 (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $k (i32.const 0))
        ;; four classes a step: two f32x2 loads a row, each promoted to an f64x2
        (block $four_done
          (loop $four
            (br_if $four_done (i32.gt_u (i32.add (local.get $k) (i32.const 4)) (local.get $K)))
            (local.set $s (i32.add (local.get $sums) (i32.shl (local.get $k) (i32.const 3))))
            (local.set $w (i32.shl (local.get $k) (i32.const 2)))
            (local.set $lo (v128.load (local.get $s)))
            (local.set $hi (v128.load offset=16 (local.get $s)))
            (local.set $x (v128.load64_zero (i32.add (local.get $a0) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v0))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a0) (local.get $w)))) (local.get $v0))))
            (local.set $x (v128.load64_zero (i32.add (local.get $a1) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v1))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a1) (local.get $w)))) (local.get $v1))))
            (local.set $x (v128.load64_zero (i32.add (local.get $a2) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v2))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a2) (local.get $w)))) (local.get $v2))))
            (local.set $x (v128.load64_zero (i32.add (local.get $a3) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v3))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a3) (local.get $w)))) (local.get $v3))))
            (local.set $x (v128.load64_zero (i32.add (local.get $a4) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v4))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a4) (local.get $w)))) (local.get $v4))))
            (local.set $x (v128.load64_zero (i32.add (local.get $a5) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v5))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a5) (local.get $w)))) (local.get $v5))))
            (local.set $x (v128.load64_zero (i32.add (local.get $a6) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v6))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a6) (local.get $w)))) (local.get $v6))))
            (local.set $x (v128.load64_zero (i32.add (local.get $a7) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v7))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a7) (local.get $w)))) (local.get $v7))))
            (v128.store (local.get $s) (local.get $lo))
            (v128.store offset=16 (local.get $s) (local.get $hi))
            (local.set $k (i32.add (local.get $k) (i32.const 4)))
            (br $four)))
        ;; two classes left: one f32x2 load a row
        (if (i32.le_u (i32.add (local.get $k) (i32.const 2)) (local.get $K))
          (then
            (local.set $s (i32.add (local.get $sums) (i32.shl (local.get $k) (i32.const 3))))
            (local.set $w (i32.shl (local.get $k) (i32.const 2)))
            (local.set $lo (v128.load (local.get $s)))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a0) (local.get $w)))) (local.get $v0))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a1) (local.get $w)))) (local.get $v1))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a2) (local.get $w)))) (local.get $v2))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a3) (local.get $w)))) (local.get $v3))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a4) (local.get $w)))) (local.get $v4))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a5) (local.get $w)))) (local.get $v5))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a6) (local.get $w)))) (local.get $v6))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a7) (local.get $w)))) (local.get $v7))))
            (v128.store (local.get $s) (local.get $lo))
            (local.set $k (i32.add (local.get $k) (i32.const 2)))))
        ;; one class left: scalar
        (if (i32.lt_u (local.get $k) (local.get $K))
          (then
            (local.set $s (i32.add (local.get $sums) (i32.shl (local.get $k) (i32.const 3))))
            (local.set $w (i32.shl (local.get $k) (i32.const 2)))
            (local.set $t (f64.load (local.get $s)))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a0) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v0)))))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a1) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v1)))))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a2) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v2)))))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a3) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v3)))))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a4) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v4)))))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a5) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v5)))))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a6) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v6)))))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a7) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v7)))))
            (f64.store (local.get $s) (local.get $t))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $runs)))
    ;; the rows after the last full run, one at a time
    (block $rest_done
      (loop $rest
        (br_if $rest_done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $a0 (i32.load (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))
        (local.set $v0 (f64x2.splat (f64.load (i32.add (local.get $factor) (i32.shl (local.get $i) (i32.const 3))))))
        (local.set $k (i32.const 0))
        ;; four classes a step: two f32x2 loads a row, each promoted to an f64x2
        (block $four_done
          (loop $four
            (br_if $four_done (i32.gt_u (i32.add (local.get $k) (i32.const 4)) (local.get $K)))
            (local.set $s (i32.add (local.get $sums) (i32.shl (local.get $k) (i32.const 3))))
            (local.set $w (i32.shl (local.get $k) (i32.const 2)))
            (local.set $lo (v128.load (local.get $s)))
            (local.set $hi (v128.load offset=16 (local.get $s)))
            (local.set $x (v128.load64_zero (i32.add (local.get $a0) (local.get $w))))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (local.get $v0))))
            (local.set $hi (f64x2.add (local.get $hi) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $a0) (local.get $w)))) (local.get $v0))))
            (v128.store (local.get $s) (local.get $lo))
            (v128.store offset=16 (local.get $s) (local.get $hi))
            (local.set $k (i32.add (local.get $k) (i32.const 4)))
            (br $four)))
        ;; two classes left: one f32x2 load a row
        (if (i32.le_u (i32.add (local.get $k) (i32.const 2)) (local.get $K))
          (then
            (local.set $s (i32.add (local.get $sums) (i32.shl (local.get $k) (i32.const 3))))
            (local.set $w (i32.shl (local.get $k) (i32.const 2)))
            (local.set $lo (v128.load (local.get $s)))
            (local.set $lo (f64x2.add (local.get $lo) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $a0) (local.get $w)))) (local.get $v0))))
            (v128.store (local.get $s) (local.get $lo))
            (local.set $k (i32.add (local.get $k) (i32.const 2)))))
        ;; one class left: scalar
        (if (i32.lt_u (local.get $k) (local.get $K))
          (then
            (local.set $s (i32.add (local.get $sums) (i32.shl (local.get $k) (i32.const 3))))
            (local.set $w (i32.shl (local.get $k) (i32.const 2)))
            (local.set $t (f64.load (local.get $s)))
            (local.set $t (f64.add (local.get $t) (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $a0) (local.get $w)))) (f64x2.extract_lane 0 (local.get $v0)))))
            (f64.store (local.get $s) (local.get $t))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rest)))))
