/** What the /users routes share in their OpenAPI description. */
export const TAGS = ['users'];
export const ETAG = {
  ETag: 'Opaque, compared whole; it names one content for the life of the database, a restore included. A record: `"<id>-<version>.<fingerprint>"`, the fingerprint a hash of all it stores. A listing: the change version in its history, `"v<n>.<history>"` (weak while streamed), or for a page a hash of its body, Link and count. Counts by group: a hash of the body and X-Total-Count. Use it with If-None-Match or If-Match.',
};
export const NOT_MODIFIED = {
  304: {
    description: 'Not modified: If-None-Match matched the current ETag.',
    type: 'null',
    headers: { ETag: { type: 'string', description: 'The current ETag, the one that matched.' } },
  },
};
export const FORMS = ['application/json', 'application/x-www-form-urlencoded'];
