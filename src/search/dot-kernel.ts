// The inner loop of meaning search: dot products of one int16 query with many
// int8 vectors, in WebAssembly SIMD (16 dimensions per step). Plain
// JavaScript does one multiply-add at a time and takes ~0.8 s for 100k
// vectors of 768 dimensions on this project's 2-core machine; this is a
// portable module of ~200 bytes (no native code: the bundle stays free of
// .node files), encoded here by hand from its text form below, so that no
// assembler is needed to build it. Its table test (test/unit/meaning.test.ts)
// checks it against the same sums in JavaScript.
//
//   (module
//     (import "env" "memory" (memory 1))
//     (func (export "dots") (param $vec i32) (param $n i32) (param $dim i32) (param $q i32) (param $out i32)
//       (local $end i32) (local $qp i32) (local $rowEnd i32) (local $acc v128) (local $v v128)
//       ;; out[i] = sum over d < dim of vec[i * dim + d] (int8) * q[d] (int16), for i < n; dim a multiple of 16
//       (local.set $end (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 2))))
//       (block $done
//         (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
//         (loop $rows
//           (local.set $acc (v128.const i32x4 0 0 0 0))
//           (local.set $qp (local.get $q))
//           (local.set $rowEnd (i32.add (local.get $vec) (local.get $dim)))
//           (loop $cols
//             (local.set $v (v128.load (local.get $vec)))
//             (local.set $acc (i32x4.add (i32x4.add (local.get $acc)
//               (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $v)) (v128.load (local.get $qp))))
//               (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $v)) (v128.load offset=16 (local.get $qp)))))
//             (local.set $qp (i32.add (local.get $qp) (i32.const 32)))
//             (br_if $cols (i32.lt_u (local.tee $vec (i32.add (local.get $vec) (i32.const 16))) (local.get $rowEnd))))
//           (i32.store (local.get $out) (i32.add (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
//                                                (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc)))))
//           (br_if $rows (i32.lt_u (local.tee $out (i32.add (local.get $out) (i32.const 4))) (local.get $end))))))

/** Dimensions per SIMD step: a vector's stored length is padded to a multiple of this with zeros. */
export const DOT_LANES = 16;

// Opcodes (WebAssembly core spec 2.0, binary format).
const I32 = 0x7f;
const V128 = 0x7b;
const get = (i: number) => [0x20, i];
const set = (i: number) => [0x21, i];
const tee = (i: number) => [0x22, i];
const i32Const = (n: number) => [0x41, n]; // n < 64: one byte of signed LEB128
const I32_ADD = 0x6a;
const I32_SHL = 0x74;
const I32_GE_U = 0x4f;
const I32_LT_U = 0x49;
const BLOCK = [0x02, 0x40];
const LOOP = [0x03, 0x40];
const END = 0x0b;
const brIf = (depth: number) => [0x0d, depth];
const i32Store = [0x36, 2, 0];
const simd = (op: number, ...rest: number[]) => [0xfd, ...leb(op), ...rest];
const v128Load = (offset: number) => simd(0x00, 0, offset);
const v128Zero = simd(0x0c, ...new Array<number>(16).fill(0));
const EXTEND_LOW_S = simd(0x87);
const EXTEND_HIGH_S = simd(0x88);
const DOT_I16 = simd(0xba);
const I32X4_ADD = simd(0xae);
const lane = (i: number) => simd(0x1b, i);

function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

const section = (id: number, body: number[]) => [id, ...leb(body.length), ...body];
const name = (s: string) => [s.length, ...[...s].map((c) => c.charCodeAt(0))];

function moduleBytes(): Uint8Array {
  const [vec, n, dim, q, out, end, qp, rowEnd, acc, v] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const code = [
    ...[2, 3, I32, 2, V128], // locals: 3 i32, 2 v128
    ...get(out), ...get(n), ...i32Const(2), I32_SHL, I32_ADD, ...set(end),
    ...BLOCK,
    ...get(out), ...get(end), I32_GE_U, ...brIf(0),
    ...LOOP,
    ...v128Zero, ...set(acc),
    ...get(q), ...set(qp),
    ...get(vec), ...get(dim), I32_ADD, ...set(rowEnd),
    ...LOOP,
    ...get(vec), ...v128Load(0), ...set(v),
    ...get(acc),
    ...get(v), ...EXTEND_LOW_S, ...get(qp), ...v128Load(0), ...DOT_I16, ...I32X4_ADD,
    ...get(v), ...EXTEND_HIGH_S, ...get(qp), ...v128Load(16), ...DOT_I16, ...I32X4_ADD,
    ...set(acc),
    ...get(qp), ...i32Const(32), I32_ADD, ...set(qp),
    ...get(vec), ...i32Const(16), I32_ADD, ...tee(vec), ...get(rowEnd), I32_LT_U, ...brIf(0),
    END,
    ...get(out),
    ...get(acc), ...lane(0), ...get(acc), ...lane(1), I32_ADD,
    ...get(acc), ...lane(2), ...get(acc), ...lane(3), I32_ADD, I32_ADD,
    ...i32Store,
    ...get(out), ...i32Const(4), I32_ADD, ...tee(out), ...get(end), I32_LT_U, ...brIf(0),
    END,
    END,
    END,
  ];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]),
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 1]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('dots'), 0x00, 0]),
    ...section(10, [1, ...leb(code.length), ...code]),
  ]);
}

/** The part of WebAssembly's API used here (the project's Node types, @types/node 20, do not declare it). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
}

/** WebAssembly memory: 64 KiB pages, grown in place (`buffer` is then a new ArrayBuffer over the same bytes). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
/**
 * The kernel compiled, once per thread: a memo of a pure computation (the
 * bytes are moduleBytes()'s, the same for every caller), so no caller can
 * see another's. What differs between callers, the memory, is each one's
 * own instance (dotKernel).
 */
let compiled: object | undefined;

/** dots(vecPtr, n, dim, queryPtr, outPtr) over the memory: byte offsets; dim a multiple of DOT_LANES. */
export type DotFunction = (vec: number, n: number, dim: number, query: number, out: number) => void;

export function wasmMemory(initialPages: number, maximumPages: number): WasmMemory {
  return new wasm.Memory({ initial: initialPages, maximum: maximumPages });
}

/** The kernel, bound to `memory` (compiled once per thread, on first use). */
export function dotKernel(memory: WasmMemory): DotFunction {
  compiled ??= new wasm.Module(moduleBytes());
  const instance = new wasm.Instance(compiled, { env: { memory } });
  return instance.exports.dots as DotFunction;
}
