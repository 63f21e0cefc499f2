import type { FastifyInstance } from 'fastify';
import type { UserStore } from '../store/store.ts';

/** Prometheus metrics at /metrics (placeholder: being written). Returns the store to hand to routes. */
export function registerMetrics(_app: FastifyInstance, store: UserStore): UserStore {
  return store;
}
