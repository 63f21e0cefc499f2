import type { FastifyInstance } from 'fastify';

/** Security headers and CORS (placeholder: being written). */
export async function registerSecurityHeaders(_app: FastifyInstance, _corsOrigins: readonly string[]): Promise<void> {}
