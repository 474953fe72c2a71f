import { invalid } from '../errors.js';

/** Where a variable is given: to the build, to the running release, or both. */
export const SCOPES = ['build', 'runtime', 'both'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Which deployments a value is for: every one (`all`), production deployments only, or previews only. A name may
 * have one value per target; a deployment takes its own target's value of a name, else the `all` one.
 */
export const TARGETS = ['all', 'production', 'preview'] as const;
export type Target = (typeof TARGETS)[number];
/** What a deployment is: it takes the variables of this target and those of `all`. */
export type DeploymentTarget = Exclude<Target, 'all'>;

export const NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
export const NAME_MAX = 255;

/** Names Hoist sets itself for builds and releases, or that would point them elsewhere. */
export const RESERVED_NAMES = ['PORT', 'HOST', 'HOME', 'PATH', 'NODE_OPTIONS'] as const;
/** Prefixes (any letter case) kept for Hoist (`HOIST_`) and for the npm settings builds pin (`npm_config_`). */
export const RESERVED_PREFIXES = ['HOIST_', 'NPM_CONFIG_'] as const;

/** The rules in words, for route documentation and error messages. */
export const RULES_TEXT =
  `Names follow POSIX rules (${NAME_PATTERN}, at most ${NAME_MAX} characters); ` +
  `${RESERVED_NAMES.join(', ')} and names starting with ` +
  `${RESERVED_PREFIXES.join(' or ')} (any case) are reserved. A value is well-formed text without NUL characters.`;

/** Throws invalid_request (details.field and details.name) unless `name` is an allowed variable name. */
export function checkName(name: unknown, field = 'name'): string {
  if (typeof name !== 'string' || name.length < 1 || name.length > NAME_MAX || !new RegExp(NAME_PATTERN).test(name)) {
    throw invalid(
      `Variable name ` +
        `${JSON.stringify(typeof name === 'string' ? name.slice(0, 100) : name)} is not ` +
        `allowed: use letters, digits and _, not starting with a digit, at most ` +
        `${NAME_MAX} characters`,
      { field, name },
    );
  }
  const upper = name.toUpperCase();
  if ((RESERVED_NAMES as readonly string[]).includes(name) || RESERVED_PREFIXES.some((p) => upper.startsWith(p))) {
    const reserved = [...RESERVED_NAMES, ...RESERVED_PREFIXES.map((p) => `${p}*`)].join(', ');
    throw invalid(`Variable name ${name} is reserved: Hoist sets it itself (reserved: ${reserved})`, { field, name });
  }
  return name;
}

/**
 * Throws invalid_request naming the variable (never echoing the value) unless `value` is well-formed text without NUL.
 */
export function checkValue(name: string, value: unknown, field = 'value'): string {
  if (typeof value !== 'string') throw invalid(`The value of ${name} must be a string`, { field, name });
  if (value.includes('\0'))
    throw invalid(`The value of ${name} contains a NUL character, which an environment cannot hold`, { field, name });
  // A lone surrogate (JSON's "\ud800") has no UTF-8 form: the process would get another value than the one stored.
  if (/\p{Cs}/u.test(value))
    throw invalid(
      `The value of ${name} is not well-formed Unicode (a lone surrogate), which an environment cannot hold`,
      {
        field,
        name,
      },
    );
  return value;
}

/** Throws invalid_request unless `scope` is build, runtime or both; absent means both. */
export function checkScope(name: string, scope: unknown, field = 'scope'): Scope {
  if (scope === undefined) return 'both';
  if (typeof scope !== 'string' || !(SCOPES as readonly string[]).includes(scope))
    throw invalid(`The scope of ${name} must be one of ${SCOPES.join(', ')}`, { field, name });
  return scope as Scope;
}

/** Throws invalid_request unless `target` is all, production or preview; absent means all. */
export function checkTarget(name: string, target: unknown, field = 'target'): Target {
  if (target === undefined) return 'all';
  if (typeof target !== 'string' || !(TARGETS as readonly string[]).includes(target))
    throw invalid(`The target of ${name} must be one of ${TARGETS.join(', ')}`, { field, name });
  return target as Target;
}
