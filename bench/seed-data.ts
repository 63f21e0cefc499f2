/** Cities the seeded records cycle through; plain ASCII so no system has to escape anything. */
export const CITIES = ['Paris', 'Berlin', 'Lyon', 'Madrid', 'Rome', 'Vienna', 'Oslo', 'Lisbon'] as const;

/** A record as the contract shows it: every value a string. */
export interface SeedRecord {
  name: string;
  age: string;
  city: string;
}

/** Record number `i` (1-based); every system is seeded with the same records, so listings match byte for byte. */
export function seedRecord(i: number): SeedRecord {
  return { name: `user${i}`, age: String(i % 151), city: CITIES[i % CITIES.length] as string };
}

/** The exact `GET /users` body for records 1..count, in the contract's key order. */
export function listingBody(count: number): Buffer {
  const parts: string[] = new Array<string>(count);
  for (let i = 1; i <= count; i++) parts[i - 1] = JSON.stringify(seedRecord(i));
  return Buffer.from(`{"data":[${parts.join(',')}]}`);
}

/** The byte length of listingBody(count), without building it. */
export function listingLength(count: number): number {
  let bytes = '{"data":[]}'.length + Math.max(0, count - 1);
  for (let i = 1; i <= count; i++) bytes += Buffer.byteLength(JSON.stringify(seedRecord(i)));
  return bytes;
}
