import { token } from '../tokens.js';

/** The current time; a port so tests can move it (token expiry, rate-limit windows). */
export interface Clock {
  /** Now. */
  now(): Date;
}

export const CLOCK = token<Clock>('hoist.Clock');
export const systemClock: Clock = { now: () => new Date() };
