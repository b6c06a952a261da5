/**
 * Keccak-256 as Ethereum uses it: the original Keccak padding (0x01 ... 0x80), not SHA3's 0x06.
 *
 * The 1600-bit state is 25 lanes of 64 bits, each held as a pair of 32-bit words (low, high) in one
 * Uint32Array, because JavaScript has no fast 64-bit integers. The round constants and rotation
 * offsets are derived from their definitions in the Keccak reference (LFSR and the (x, y) walk)
 * instead of being pasted as tables.
 *
 * Speed (bench/keccak.ts): theta's column parities live in local variables; theta is applied while
 * rho and pi move each lane into a scratch buffer, and chi reads that buffer back into the state.
 * The two buffers are allocated once: keccak256 is synchronous and calls nothing that could re-enter
 * it, so no two calls ever share them at the same time.
 */

const ROUNDS = 24;
const RATE = 136; // bytes per block: 1600 bits minus a capacity of 2 * 256 bits
const RATE_WORDS = RATE / 4;

// For lane x + 5y (1..24): its rho rotation and the word index where pi puts it. Lane 0 stays put.
// Int32Array rather than Uint8Array: V8 loads them measurably faster in the inner loop.
const ROTATION = new Int32Array(25);
const DESTINATION = new Int32Array(25);
// Round constants split into low and high 32-bit halves.
const IOTA_LO = new Uint32Array(ROUNDS);
const IOTA_HI = new Uint32Array(ROUNDS);

{
  // The reference walk: starting at (1, 0), the t-th lane is rotated by (t + 1)(t + 2) / 2 and
  // pi sends lane (x, y) to (y, 2x + 3y), which is also the next lane of the walk.
  for (let t = 0, x = 1, y = 0; t < 24; t++) {
    const lane = x + 5 * y;
    [x, y] = [y, (2 * x + 3 * y) % 5];
    ROTATION[lane] = (((t + 1) * (t + 2)) / 2) % 64; // never 0 or 32, see rhoPi
    DESTINATION[lane] = 2 * (x + 5 * y);
  }
  // rc(t): the output bit of the LFSR x^8 + x^6 + x^5 + x^4 + 1 after t steps.
  let r = 1;
  const lfsr = (): number => {
    const bit = r & 1;
    r = r & 0x80 ? ((r << 1) ^ 0x171) & 0xff : r << 1;
    return bit;
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (let j = 0; j < 7; j++) {
      if (lfsr()) {
        const bit = (1 << j) - 1; // bit position 2^j - 1 of the 64-bit constant
        if (bit < 32) IOTA_LO[round] |= 1 << bit;
        else IOTA_HI[round] |= 1 << (bit - 32);
      }
    }
  }
}

const S = new Uint32Array(50); // the sponge state
const B = new Uint32Array(50); // the state after theta, rho and pi, before chi

/** Writes lane `lane` (already through theta) into `b` at its pi position, rotated by rho. */
function rhoPi(b: Uint32Array, lane: number, lo: number, hi: number): void {
  const n = ROTATION[lane];
  const dst = DESTINATION[lane];
  if (n < 32) {
    b[dst] = (lo << n) | (hi >>> (32 - n));
    b[dst + 1] = (hi << n) | (lo >>> (32 - n));
  } else {
    const m = n - 32; // rotating by 32 + m swaps the halves first
    b[dst] = (hi << m) | (lo >>> (32 - m));
    b[dst + 1] = (lo << m) | (hi >>> (32 - m));
  }
}

/** The Keccak-f[1600] permutation on 25 (low, high) lane pairs. */
function keccakF(s: Uint32Array): void {
  const b = B;
  for (let round = 0; round < ROUNDS; round++) {
    // theta: column parities c, then d[x] = c[x - 1] ^ rotl(c[x + 1], 1) for each column x
    const c0 = s[0] ^ s[10] ^ s[20] ^ s[30] ^ s[40];
    const c1 = s[1] ^ s[11] ^ s[21] ^ s[31] ^ s[41];
    const c2 = s[2] ^ s[12] ^ s[22] ^ s[32] ^ s[42];
    const c3 = s[3] ^ s[13] ^ s[23] ^ s[33] ^ s[43];
    const c4 = s[4] ^ s[14] ^ s[24] ^ s[34] ^ s[44];
    const c5 = s[5] ^ s[15] ^ s[25] ^ s[35] ^ s[45];
    const c6 = s[6] ^ s[16] ^ s[26] ^ s[36] ^ s[46];
    const c7 = s[7] ^ s[17] ^ s[27] ^ s[37] ^ s[47];
    const c8 = s[8] ^ s[18] ^ s[28] ^ s[38] ^ s[48];
    const c9 = s[9] ^ s[19] ^ s[29] ^ s[39] ^ s[49];
    const d0 = c8 ^ ((c2 << 1) | (c3 >>> 31));
    const d1 = c9 ^ ((c3 << 1) | (c2 >>> 31));
    const d2 = c0 ^ ((c4 << 1) | (c5 >>> 31));
    const d3 = c1 ^ ((c5 << 1) | (c4 >>> 31));
    const d4 = c2 ^ ((c6 << 1) | (c7 >>> 31));
    const d5 = c3 ^ ((c7 << 1) | (c6 >>> 31));
    const d6 = c4 ^ ((c8 << 1) | (c9 >>> 31));
    const d7 = c5 ^ ((c9 << 1) | (c8 >>> 31));
    const d8 = c6 ^ ((c0 << 1) | (c1 >>> 31));
    const d9 = c7 ^ ((c1 << 1) | (c0 >>> 31));
    // theta applied on the way through rho and pi, a row of 5 lanes at a time
    b[0] = s[0] ^ d0;
    b[1] = s[1] ^ d1;
    rhoPi(b, 1, s[2] ^ d2, s[3] ^ d3);
    rhoPi(b, 2, s[4] ^ d4, s[5] ^ d5);
    rhoPi(b, 3, s[6] ^ d6, s[7] ^ d7);
    rhoPi(b, 4, s[8] ^ d8, s[9] ^ d9);
    for (let y = 10, lane = 5; y < 50; y += 10, lane += 5) {
      rhoPi(b, lane, s[y] ^ d0, s[y + 1] ^ d1);
      rhoPi(b, lane + 1, s[y + 2] ^ d2, s[y + 3] ^ d3);
      rhoPi(b, lane + 2, s[y + 4] ^ d4, s[y + 5] ^ d5);
      rhoPi(b, lane + 3, s[y + 6] ^ d6, s[y + 7] ^ d7);
      rhoPi(b, lane + 4, s[y + 8] ^ d8, s[y + 9] ^ d9);
    }
    // chi: each lane ^= ~next & nextnext, row by row, back into the state
    for (let y = 0; y < 50; y += 10) {
      const a0 = b[y], a1 = b[y + 1], a2 = b[y + 2], a3 = b[y + 3], a4 = b[y + 4];
      const a5 = b[y + 5], a6 = b[y + 6], a7 = b[y + 7], a8 = b[y + 8], a9 = b[y + 9];
      s[y] = a0 ^ (~a2 & a4);
      s[y + 1] = a1 ^ (~a3 & a5);
      s[y + 2] = a2 ^ (~a4 & a6);
      s[y + 3] = a3 ^ (~a5 & a7);
      s[y + 4] = a4 ^ (~a6 & a8);
      s[y + 5] = a5 ^ (~a7 & a9);
      s[y + 6] = a6 ^ (~a8 & a0);
      s[y + 7] = a7 ^ (~a9 & a1);
      s[y + 8] = a8 ^ (~a0 & a2);
      s[y + 9] = a9 ^ (~a1 & a3);
    }
    // iota
    s[0] ^= IOTA_LO[round];
    s[1] ^= IOTA_HI[round];
  }
}

// Lanes are little-endian; on such a machine a Uint32Array view already reads words in that order.
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The little-endian 32-bit word at data[p .. p + 4). */
function word(data: Uint8Array, p: number): number {
  return data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) | (data[p + 3] << 24);
}

export function keccak256(data: Uint8Array): Uint8Array {
  if (!(data instanceof Uint8Array)) throw new TypeError('keccak256 expects a Uint8Array');
  const s = S;
  s.fill(0);
  const blocksEnd = data.length - (data.length % RATE);
  if (LITTLE_ENDIAN && data.byteOffset % 4 === 0 && blocksEnd > 0) {
    // Aligned input: absorb whole words through a view of the caller's bytes (read only).
    const words = new Uint32Array(data.buffer, data.byteOffset, blocksEnd / 4);
    for (let w = 0; w < words.length; w += RATE_WORDS) {
      for (let i = 0; i < RATE_WORDS; i++) s[i] ^= words[w + i];
      keccakF(s);
    }
  } else {
    for (let p = 0; p < blocksEnd; p += RATE) {
      for (let i = 0; i < RATE_WORDS; i++) s[i] ^= word(data, p + 4 * i);
      keccakF(s);
    }
  }
  // Last block: the remaining bytes, then the padding 0x01 ... 0x80 (one byte 0x81 if they meet).
  const rest = data.length - blocksEnd;
  let i = 0;
  for (; i + 4 <= rest; i += 4) s[i >> 2] ^= word(data, blocksEnd + i);
  for (; i < rest; i++) s[i >> 2] ^= data[blocksEnd + i] << (8 * (i & 3));
  s[rest >> 2] ^= 1 << (8 * (rest & 3));
  s[RATE_WORDS - 1] ^= 0x80 << 24;
  keccakF(s);
  const out = new Uint8Array(32);
  for (let j = 0; j < 32; j++) out[j] = s[j >> 2] >>> (8 * (j & 3));
  return out;
}
