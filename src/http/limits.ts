import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';

export type LimitsConfig = Pick<Config, 'rateLimit' | 'overloadLagMs'>;

/** URL length, rate limit and overload shedding (placeholder: being written). */
export async function registerLimits(_app: FastifyInstance, _config: LimitsConfig): Promise<void> {}
