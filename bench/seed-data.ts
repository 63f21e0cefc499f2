import { readFileSync, writeFileSync } from 'node:fs';

/**
 * The records every system is seeded with, the same for all so listings match byte for byte.
 * `realistic` (the default): names and cities made by @faker-js/faker, seeded, in many locales
 * (accents, Cyrillic, Greek, Arabic, CJK), so searches and counts select what they would in real
 * use. `synthetic` (`npm run bench -- --synthetic`): `user<N>` in 8 ASCII cities, the worst case for
 * a substring search, where `ser123` matches user123, user1230..user1239 and on.
 * A child process (a baseline) reads the same data from the file SEED_DATA names, or 'synthetic'.
 */
export type Dataset = 'realistic' | 'synthetic';

/** The synthetic data's cities. */
const SYNTHETIC_CITIES = ['Paris', 'Berlin', 'Lyon', 'Madrid', 'Rome', 'Vienna', 'Oslo', 'Lisbon'] as const;

/** Names and cities of one locale; record i takes both from the same locale. */
interface Locale {
  names: string[];
  cities: string[];
}

// Western, Central and Eastern Europe, the Americas, the Middle East, Asia: Latin with and without
// accents, Cyrillic, Greek, Arabic, Han, kana, Hangul.
const LOCALES = [
  'en_US', 'en_GB', 'de', 'fr', 'es', 'it', 'pt_BR', 'nl', 'sv', 'pl', 'cs_CZ', 'hu', 'tr', 'ru', 'uk', 'el',
  'ar', 'he', 'ja', 'zh_CN', 'ko', 'vi',
] as const; // prettier-ignore
const NAMES_PER_LOCALE = 400;
const CITIES_PER_LOCALE = 20;

async function buildLocales(): Promise<Locale[]> {
  const faker = await import('@faker-js/faker');
  return LOCALES.map((code, i) => {
    const generator = new faker.Faker({ locale: [faker.allLocales[code], faker.en, faker.base] });
    generator.seed(1000 + i);
    const cities = new Set<string>();
    for (let tries = 0; cities.size < CITIES_PER_LOCALE && tries < 1000; tries++) cities.add(generator.location.city());
    return {
      names: Array.from({ length: NAMES_PER_LOCALE }, () => generator.person.fullName()),
      cities: [...cities],
    };
  });
}

const given = process.env.SEED_DATA;
let locales: Locale[] | undefined =
  given === 'synthetic'
    ? undefined
    : given !== undefined && given !== ''
      ? (JSON.parse(readFileSync(given, 'utf8')) as Locale[])
      : await buildLocales();

export function dataset(): Dataset {
  return locales === undefined ? 'synthetic' : 'realistic';
}

/** Seeds with `user<N>` from now on, in this process and the children it starts. */
export function useSynthetic(): void {
  locales = undefined;
  process.env.SEED_DATA = 'synthetic';
}

/** Writes the realistic data to `file` for the children this process starts (they skip faker). */
export function shareSeedData(file: string): void {
  if (locales === undefined) return;
  writeFileSync(file, JSON.stringify(locales));
  process.env.SEED_DATA = file;
}

/** A record as the contract shows it: every value a string. */
export interface SeedRecord {
  name: string;
  age: string;
  city: string;
}

/** A 32-bit hash of i (murmur3's finaliser): record i's picks, the same in every process. */
function mix(i: number, salt: number): number {
  let h = Math.imul(i ^ salt, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The realistic ages run from 18 to 90. */
export const AGES = { min: 18, count: 73 } as const;

/** Record number `i` (1-based); every system is seeded with the same records, so listings match byte for byte. */
export function seedRecord(i: number): SeedRecord {
  if (locales === undefined) {
    return { name: `user${i}`, age: String(i % 151), city: SYNTHETIC_CITIES[i % SYNTHETIC_CITIES.length] as string };
  }
  const locale = locales[mix(i, 1) % locales.length] as Locale;
  return {
    name: locale.names[mix(i, 2) % locale.names.length] as string,
    age: String(AGES.min + (mix(i, 3) % AGES.count)),
    city: locale.cities[mix(i, 4) % locale.cities.length] as string,
  };
}

/** Every city the seeded records can have. */
export function seedCities(): string[] {
  return locales === undefined ? [...SYNTHETIC_CITIES] : locales.flatMap((locale) => locale.cities);
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

/** Records 1..count in batches (for a database's bulk insert): the first record number and the records. */
export function* seedBatches(count: number, size = 20_000): Generator<{ first: number; records: SeedRecord[] }> {
  for (let first = 1; first <= count; first += size) {
    const last = Math.min(count, first + size - 1);
    yield { first, records: Array.from({ length: last - first + 1 }, (_, k) => seedRecord(first + k)) };
  }
}
