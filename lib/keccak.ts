/**
 * Keccak-256 as Ethereum uses it: the original Keccak padding (0x01 ... 0x80), not SHA3's 0x06.
 *
 * The 1600-bit state is 25 lanes of 64 bits, each held as a pair of 32-bit words (low, high) in one
 * Uint32Array, because JavaScript has no fast 64-bit integers. The round constants and rotation
 * offsets are derived from their definitions in the Keccak reference (LFSR and the (x, y) walk)
 * instead of being pasted as tables.
 */

const ROUNDS = 24;
const RATE = 136; // bytes: 1600 bits minus a capacity of 2 * 256 bits

// Rotation offset and pi destination for the t-th lane of the rho/pi walk, starting at lane (1, 0).
const RHO: number[] = [];
const PI: number[] = [];
// Round constants split into low and high 32-bit halves.
const IOTA_LO = new Uint32Array(ROUNDS);
const IOTA_HI = new Uint32Array(ROUNDS);

{
  let x = 1;
  let y = 0;
  for (let t = 0; t < 24; t++) {
    RHO.push((((t + 1) * (t + 2)) / 2) % 64);
    [x, y] = [y, (2 * x + 3 * y) % 5];
    PI.push(x + 5 * y);
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

/** The Keccak-f[1600] permutation on 25 (low, high) lane pairs. */
function keccakF(s: Uint32Array, c: Uint32Array): void {
  for (let round = 0; round < ROUNDS; round++) {
    // theta: column parities, then each lane ^= parity[x-1] ^ rotl(parity[x+1], 1)
    for (let x = 0; x < 10; x++) c[x] = s[x] ^ s[x + 10] ^ s[x + 20] ^ s[x + 30] ^ s[x + 40];
    for (let x = 0; x < 10; x += 2) {
      const prev = x === 0 ? 8 : x - 2;
      const next = x === 8 ? 0 : x + 2;
      const lo = c[prev] ^ ((c[next] << 1) | (c[next + 1] >>> 31));
      const hi = c[prev + 1] ^ ((c[next + 1] << 1) | (c[next] >>> 31));
      for (let y = 0; y < 50; y += 10) {
        s[y + x] ^= lo;
        s[y + x + 1] ^= hi;
      }
    }
    // rho and pi in one walk: each lane moves to its pi position, rotated by its rho offset.
    let lo = s[2];
    let hi = s[3];
    for (let t = 0; t < 24; t++) {
      const n = RHO[t];
      const dst = PI[t] * 2;
      const nextLo = s[dst];
      const nextHi = s[dst + 1];
      if (n < 32) {
        s[dst] = (lo << n) | (hi >>> (32 - n));
        s[dst + 1] = (hi << n) | (lo >>> (32 - n));
      } else {
        const m = n - 32; // rotating by 32 + m swaps the halves first
        s[dst] = (hi << m) | (lo >>> (32 - m));
        s[dst + 1] = (lo << m) | (hi >>> (32 - m));
      }
      lo = nextLo;
      hi = nextHi;
    }
    // chi: each lane ^= ~next & nextnext, row by row
    for (let y = 0; y < 50; y += 10) {
      const a0 = s[y], a1 = s[y + 1], a2 = s[y + 2], a3 = s[y + 3], a4 = s[y + 4];
      const a5 = s[y + 5], a6 = s[y + 6], a7 = s[y + 7], a8 = s[y + 8], a9 = s[y + 9];
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

/** XORs `len` bytes (a multiple of 4, at most RATE) of `data` from `offset` into the state. */
function absorbWords(s: Uint32Array, data: Uint8Array, offset: number, words: number): void {
  for (let i = 0, p = offset; i < words; i++, p += 4) {
    s[i] ^= data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) | (data[p + 3] << 24);
  }
}

export function keccak256(data: Uint8Array): Uint8Array {
  const s = new Uint32Array(50);
  const c = new Uint32Array(10);
  const fullBlocks = Math.floor(data.length / RATE);
  let offset = 0;
  for (let b = 0; b < fullBlocks; b++, offset += RATE) {
    absorbWords(s, data, offset, RATE / 4);
    keccakF(s, c);
  }
  // Last, padded block: the remaining bytes, then 0x01 ... 0x80 (the same byte 0x81 if adjacent).
  const block = new Uint8Array(RATE);
  block.set(data.subarray(offset));
  block[data.length - offset] ^= 0x01;
  block[RATE - 1] ^= 0x80;
  absorbWords(s, block, 0, RATE / 4);
  keccakF(s, c);
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const w = s[i];
    out[i * 4] = w;
    out[i * 4 + 1] = w >>> 8;
    out[i * 4 + 2] = w >>> 16;
    out[i * 4 + 3] = w >>> 24;
  }
  return out;
}
