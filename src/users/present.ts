import type { User } from '../store/store.ts';
import { ALL_FIELDS, type FieldName, type UserRecord } from './schemas.ts';

const DEFAULT_FIELDS: readonly FieldName[] = ['name', 'age', 'city'];

/** The keys a request asked for with `fields` (already validated), in canonical order. */
export function selectedFields(fields: string | undefined): readonly FieldName[] {
  if (fields === undefined) return DEFAULT_FIELDS;
  const wanted = new Set(fields.split(','));
  return ALL_FIELDS.filter((field) => wanted.has(field));
}

/** The one place a stored user becomes an API record. */
export function toRecord(user: User, fields: readonly FieldName[]): UserRecord {
  const record: UserRecord = {};
  for (const field of fields) {
    switch (field) {
      case 'id':
        record.id = user.id;
        break;
      case 'age':
        record.age = String(user.age);
        break;
      case 'createdAt':
        record.createdAt = user.createdAt.toISOString();
        break;
      case 'updatedAt':
        record.updatedAt = user.updatedAt.toISOString();
        break;
      default:
        record[field] = user[field];
    }
  }
  return record;
}

export function envelope(users: User[], fields: readonly FieldName[]): { data: UserRecord[] } {
  return { data: users.map((user) => toRecord(user, fields)) };
}

/** A record's strong ETag: it changes with every write to the record, whatever `fields` shows. */
export function userEtag(user: User): string {
  return `"${user.id}-${user.version}"`;
}
