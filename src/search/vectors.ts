// Vector arithmetic of meaning search, pure: int8 quantisation (a chunk's
// vector is stored as one signed byte per dimension and a scale, a quarter of
// float32's size, with cosine rankings that agree to within ~1%), cosine over
// the stored form, and reciprocal rank fusion of the text and vector ranks.

/** A vector as stored: bytes = round(v[i] / scale), scale = max |v[i]| / 127. */
export interface Quantised {
  bytes: Int8Array;
  scale: number;
}

export function quantise(v: Float32Array): Quantised {
  let max = 0;
  for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(v[i]!));
  const scale = max === 0 ? 1 : max / 127;
  const bytes = new Int8Array(v.length);
  for (let i = 0; i < v.length; i++) bytes[i] = Math.max(-127, Math.min(127, Math.round(v[i]! / scale)));
  return { bytes, scale };
}

export function dequantise(q: Quantised): Float32Array {
  const out = new Float32Array(q.bytes.length);
  for (let i = 0; i < out.length; i++) out[i] = q.bytes[i]! * q.scale;
  return out;
}

/** The query as cosine compares it: unit length (a zero vector stays zero). */
export function normalise(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  const out = new Float32Array(v.length);
  if (norm > 0) for (let i = 0; i < v.length; i++) out[i] = v[i]! / norm;
  return out;
}

/**
 * Cosine of a unit-length query and a stored vector's bytes. The scale
 * cancels out of a cosine, so the bytes are used as they are; a zero
 * vector scores 0.
 */
export function cosineInt8(unitQuery: Float32Array, bytes: Int8Array): number {
  let dot = 0;
  let sum = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    dot += unitQuery[i]! * b;
    sum += b * b;
  }
  return sum === 0 ? 0 : dot / Math.sqrt(sum);
}

/** k of reciprocal rank fusion: the value of the paper (Cormack et al., 2009), which damps the weight of the very top ranks. */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each key scores the sum over the rankings it is in
 * of 1 / (k + rank), rank 1-based; best first, ties in order of first
 * appearance (the first ranking's order wins).
 */
export function fuseRanks<K>(rankings: readonly (readonly K[])[], k = RRF_K): { key: K; score: number }[] {
  const scores = new Map<K, number>();
  for (const ranking of rankings) ranking.forEach((key, i) => scores.set(key, (scores.get(key) ?? 0) + 1 / (k + i + 1)));
  return [...scores].map(([key, score]) => ({ key, score })).sort((a, b) => b.score - a.score);
}
