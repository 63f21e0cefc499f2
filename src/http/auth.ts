import type { FastifyInstance } from 'fastify';
import type { ApiToken } from '../config.ts';

/** Bearer-token authentication (placeholder: being written). */
export function registerAuth(_app: FastifyInstance, _tokens: readonly ApiToken[]): void {}
