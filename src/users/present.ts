import type { FastifyReply } from 'fastify';
import { parseEntityTags, uncodedOpaque } from '../http/conditional.ts';
import { fingerprint } from '../store/fingerprint.ts';
import type { Precondition, User } from '../store/store.ts';
import type { FieldName } from '../record/fields.ts';
import { recordJson } from '../record/json.ts';

/** The envelope of an answer that shows records: `{"data":[...]}`. */
export function envelopeJson(users: readonly User[], fields: readonly FieldName[]): string {
  let body = '{"data":[';
  for (let i = 0; i < users.length; i++) body += (i === 0 ? '' : ',') + recordJson(users[i] as User, fields);
  return `${body}]}`;
}

/** Sends the records as the answer's JSON body. */
export function sendUsers(reply: FastifyReply, users: readonly User[], fields: readonly FieldName[]): FastifyReply {
  return reply.type(JSON_TYPE).send(envelopeJson(users, fields));
}

export const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A record's strong ETag, `"<id>-<version>.<fingerprint>"`: the fingerprint names its content (all
 * it stores), so a tag never names two contents, even after a restore has set the version back; it
 * changes with every write to the record, whatever `fields` shows.
 */
export function userEtag(user: User): string {
  return `"${user.id}-${user.version}.${fingerprint(user)}"`;
}

const RECORD_ETAG = /^"([1-9][0-9]*)-[1-9][0-9]*\.([A-Za-z0-9_-]{16})"$/;

/**
 * What an If-Match header requires of record `id`, as data for the store: `*` takes any stored
 * version; otherwise the contents named by this record's strong ETags (a weak tag, or another
 * record's, never matches), also as a compressed answer named them (`"...-gzip"`: the same content).
 */
export function preconditionOf(ifMatch: string, id: number): Precondition {
  const tags = parseEntityTags(ifMatch);
  if (tags === '*') return { anyVersion: true };
  const fingerprints: string[] = [];
  for (const tag of tags) {
    const match = RECORD_ETAG.exec(uncodedOpaque(tag.opaque));
    if (!tag.weak && match !== null && match[1] === String(id)) fingerprints.push(match[2] as string);
  }
  return { fingerprints };
}
