import type { FastifyInstance } from 'fastify';
import { allowOnly } from '../http/methods.ts';
import type { UserStore } from '../store/store.ts';
import { registerCollectionRoutes } from './collection-routes.ts';
import { registerItemRoutes } from './item-routes.ts';
import { registerStatsRoute } from './stats-routes.ts';

/**
 * The users API: `GET|POST /users`, `GET|HEAD /users/stats` and `GET|HEAD|PUT|PATCH|DELETE /users/:id`;
 * other methods answer 405.
 */
export function registerUserRoutes(app: FastifyInstance, store: UserStore, listingCacheBytes: number): void {
  registerCollectionRoutes(app, store, listingCacheBytes);
  registerStatsRoute(app, store);
  registerItemRoutes(app, store);
  allowOnly(app, '/users', ['GET', 'POST']);
  allowOnly(app, '/users/stats', ['GET']);
  allowOnly(app, '/users/:id', ['GET', 'PUT', 'PATCH', 'DELETE']);
}
