/** What the /users routes share in their OpenAPI description. */
export const TAGS = ['users'];
export const ETAG = {
  ETag: 'The record version (or, for lists, a hash of the body); use it with If-None-Match or If-Match.',
};
export const NOT_MODIFIED = {
  304: {
    description: 'Not modified: If-None-Match matched the current ETag.',
    type: 'null',
    headers: { ETag: { type: 'string', description: 'The current ETag, the one that matched.' } },
  },
};
export const FORMS = ['application/json', 'application/x-www-form-urlencoded'];
