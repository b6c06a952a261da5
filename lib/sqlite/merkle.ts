/**
 * Merkle tree insertions (docs/design.md#merkle-tree-insertions) on node:sqlite. Statements are
 * prepared once.
 *
 * Message ids are stored as 32-byte BLOBs (schema migration 4) and leave as the API's lower-case
 * '0x' + 64 hex digits; the conversion is here, at the store's edge.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { MerkleInsertion } from '../types.ts';
import type { Transaction } from './transaction.ts';
import { InvalidArgumentError } from '../errors/classes.ts';

export interface MerkleTable {
  /** Writes every record in one transaction (all or none); a repeated (chain, leaf_index) replaces. Returns rows written. */
  insert(records: readonly MerkleInsertion[]): number;
  /** insert() for records packed by packMerkle(): the form they cross to the store's worker in. */
  insertPacked(packed: PackedMerkle): number;
  /** Records of `domain` with start <= leaf_index <= end, ordered by leaf_index. */
  list(domain: number, start: number, end: number): MerkleInsertion[];
  count(): number;
}

/**
 * Records in columns, the cheapest form we measured to hand to the worker thread: for 10 000
 * records, 2.4 ms from packing to the worker's answer, against 16.7 ms for the record objects
 * (structured clone) and 6.7 ms for the body text
 * (BENCHMARKS.md#storage-off-the-event-loop-node-benchstorets-node-benchmerklets). `numbers`
 * holds chain, leaf_index and insertion_block_number of record i at 3i..3i+2; `ids` the 32 bytes
 * of every message id, end to end, decoded from hex where the records are packed. Both buffers
 * are transferred, not copied (an id crossing as hex text was copied, then decoded in the worker).
 */
export interface PackedMerkle {
  numbers: Float64Array<ArrayBuffer>;
  ids: Uint8Array<ArrayBuffer>;
}

const ID_BYTES = 32;

function hasIdShape(value: unknown): value is string {
  return typeof value === 'string' && value.length === 2 + 2 * ID_BYTES && value.startsWith('0x');
}

/**
 * Packs records for insertPacked(), or undefined when one lacks the shape the columns need (a
 * field that is not a number, an id that is not '0x' and 64 hex digits): those go through
 * insert(), whose table refuses them as it refuses any direct caller's bad record.
 */
export function packMerkle(records: readonly MerkleInsertion[]): PackedMerkle | undefined {
  const numbers = new Float64Array(records.length * 3);
  const ids = new Uint8Array(records.length * ID_BYTES);
  const writer = Buffer.from(ids.buffer);
  for (let i = 0; i < records.length; i++) {
    const { chain, leaf_index, insertion_block_number, message_id } = records[i];
    if (typeof chain !== 'number' || typeof leaf_index !== 'number' || typeof insertion_block_number !== 'number')
      return undefined;
    if (!hasIdShape(message_id)) return undefined;
    numbers[3 * i] = chain;
    numbers[3 * i + 1] = leaf_index;
    numbers[3 * i + 2] = insertion_block_number;
    // Buffer's hex decoding stops at the first pair that is not hex: the count written tells.
    if (writer.write(message_id.slice(2), ID_BYTES * i, ID_BYTES, 'hex') !== ID_BYTES) return undefined;
  }
  return { numbers, ids };
}

/** The 32 bytes of an id, or undefined when a character is not a hex digit. */
function decodeId(hex: string): Buffer | undefined {
  const bytes = Buffer.from(hex, 'hex');
  return bytes.length === ID_BYTES ? bytes : undefined;
}

export function createSqliteMerkleTable(db: DatabaseSync, transaction: Transaction): MerkleTable {
  const upsert = db.prepare(
    'INSERT OR REPLACE INTO merkle_insertions (chain, leaf_index, insertion_block_number, message_id) VALUES (?, ?, ?, ?)',
  );
  const select = db.prepare(
    "SELECT chain, insertion_block_number, leaf_index, '0x' || lower(hex(message_id)) AS message_id FROM merkle_insertions " +
      'WHERE chain = ? AND leaf_index BETWEEN ? AND ? ORDER BY leaf_index',
  );
  const countRows = db.prepare('SELECT count(*) AS n FROM merkle_insertions');

  return {
    insert(records) {
      if (records.length === 0) return 0;
      return transaction(() => {
        for (const r of records) {
          // An id that is not 32 bytes of hex is bound as it came: the STRICT BLOB column refuses it.
          const bytes = hasIdShape(r.message_id) ? decodeId(r.message_id.slice(2)) : undefined;
          upsert.run(r.chain, r.leaf_index, r.insertion_block_number, bytes ?? r.message_id);
        }
        // An INSERT OR REPLACE that does not throw writes exactly one row.
        return records.length;
      });
    },
    insertPacked({ numbers, ids }) {
      const count = numbers.length / 3;
      if (count === 0) return 0;
      if (ids.length !== count * ID_BYTES) throw new InvalidArgumentError('packed message ids are not 32 bytes each');
      return transaction(() => {
        for (let i = 0; i < count; i++) {
          upsert.run(
            numbers[3 * i],
            numbers[3 * i + 1],
            numbers[3 * i + 2],
            ids.subarray(ID_BYTES * i, ID_BYTES * (i + 1)),
          );
        }
        return count;
      });
    },
    list(domain, start, end) {
      // Plain objects (node:sqlite rows have a null prototype), in the API's field order (the SELECT's).
      return (select.all(domain, start, end) as unknown as MerkleInsertion[]).map((row) => ({ ...row }));
    },
    count() {
      return Number((countRows.get() as { n: number }).n);
    },
  };
}
