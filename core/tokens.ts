/** Injection tokens of the bindings that are not ports: configuration, database, core services. */
export const CONFIG = Symbol.for('hoist.Config');
export const ENTITY_MANAGER = Symbol.for('hoist.EntityManager');
export const LOGGER = Symbol.for('hoist.Logger');
