/** The version of the service (package.json's, checked by test/config/config.test.ts); the OpenAPI document carries it. */
export const VERSION = '1.0.0';
