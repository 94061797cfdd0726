// Internal: a bump allocator for small keys.
//
// V8 allocates a typed array of more than 64 bytes outside the JS heap, which costs
// close to a microsecond; a view on a shared ArrayBuffer costs tens of nanoseconds.
// So, like Node's Buffer pool, keys are carved out of 16 KiB slabs. A slab region is
// handed out once and never reused, so views never alias each other. Keys larger than
// a quarter slab get their own ArrayBuffer.

const SLAB_SIZE = 16 * 1024;
const MAX_POOLED = SLAB_SIZE / 4;

let slab = new ArrayBuffer(SLAB_SIZE);
let slabBytes = new Uint8Array(slab);
let offset = 0;

/**
 * Returns a writable scratch view of at least `capacity` bytes at the current slab
 * position; follow with {@link commit} of the bytes actually used. `capacity` must be at
 * most `MAX_POOLED` (callers check {@link fitsPool}).
 */
export function reserve(capacity: number): Uint8Array {
  if (offset + capacity > SLAB_SIZE) newSlab();
  return slabBytes;
}

/** The offset in the array returned by {@link reserve} where the reservation starts. */
export function reservedOffset(): number {
  return offset;
}

/** Hands out `length` bytes starting at the reservation as a fresh Uint8Array view. */
export function commit(length: number): Uint8Array {
  const view = new Uint8Array(slab, offset, length);
  offset += length;
  return view;
}

/** True when a key of `length` bytes is served from the pool. */
export function fitsPool(length: number): boolean {
  return length <= MAX_POOLED;
}

/** A zero-filled Uint8Array of `length` bytes, pooled when small. */
export function alloc(length: number): Uint8Array {
  if (length > MAX_POOLED) return new Uint8Array(length);
  if (offset + length > SLAB_SIZE) newSlab();
  const view = new Uint8Array(slab, offset, length);
  offset += length;
  return view;
}

function newSlab(): void {
  slab = new ArrayBuffer(SLAB_SIZE);
  slabBytes = new Uint8Array(slab);
  offset = 0;
}
