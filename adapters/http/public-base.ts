import type { FastifyRequest } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';

/** Where the API is reached from outside, for URLs an answer hands out: `publicUrl`, else the request's own origin. */
export const publicBase = (config: Pick<HoistConfig, 'publicUrl'>, req: FastifyRequest): string =>
  (config.publicUrl ?? `${req.protocol}://${req.host}`).replace(/\/+$/, '');
