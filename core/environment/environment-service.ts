import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { EnvironmentSnapshot } from '../entities/environment-snapshot.js';
import { EnvironmentVariable } from '../entities/environment-variable.js';
import { Project } from '../entities/project.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { ProjectKey } from '../entities/project-key.js';
import { invalid, notFound, StageError } from '../errors.js';
import { DecryptError, type Cipher, type WrappedKey } from '../ports/cipher.js';
import type { Clock } from '../ports/clock.js';
import type { ProjectService } from '../projects/project-service.js';
import {
  checkName,
  checkScope,
  checkTarget,
  checkValue,
  type DeploymentTarget,
  type Scope,
  type Target,
} from './variable-rules.js';
import { token } from '../tokens.js';
import { loadById } from '../entities/plain-sql.js';

export const ENVIRONMENT_SERVICE = token<EnvironmentService>('hoist.EnvironmentService');

/** A variable as the API shows it: never its value. */
export interface VariableView {
  name: string;
  scope: string;
  target: string;
  digest: string;
  created_at: string;
  updated_at: string;
}

/** A variable to store, validated. */
export interface NewVariable {
  name: string;
  value: string;
  scope: Scope;
  target: Target;
}

/** A variable as a deployment got it: its target's value, else the `all` one. */
type TakenVariable = Omit<NewVariable, 'target'>;

// Associated data: a sealed value opens only for the project, name and target (or operation) it was sealed for. A
// value for all deployments keeps the form it had before targets.
const valueAad = (projectId: string, name: string, target: string) =>
  `hoist-env:v1:${projectId}:${name}${target === 'all' ? '' : `:${target}`}`;
const snapshotAad = (projectId: string, operationId: string) => `hoist-env-snapshot:v1:${projectId}:${operationId}`;

const view = (v: EnvironmentVariable): VariableView => ({
  name: v.name,
  scope: v.scope,
  target: v.target,
  digest: v.digest,
  created_at: v.createdAt.toISOString(),
  updated_at: v.updatedAt.toISOString(),
});

/**
 * A project's environment variables: list (names, scopes, digests), set and remove, encrypted with
 * the project's data key (Cipher); the snapshot a deployment runs with; and re-wrapping every data
 * key under the current master key. Values leave this service only towards builds and releases.
 */
export class EnvironmentService {
  constructor(
    private readonly em: EntityManager,
    private readonly cipher: Cipher,
    private readonly projects: ProjectService,
    private readonly entitlements: EntitlementService,
    private readonly clock: Clock,
  ) {}

  /** The project's variables by name, then target; not_found for another account's project. */
  async list(accountId: string, projectId: string): Promise<VariableView[]> {
    const project = await this.projects.get(accountId, projectId);
    const rows = await this.em
      .fork()
      .find(EnvironmentVariable, { projectId: project.id }, { orderBy: { name: 'asc', target: 'asc' } });
    return rows.map(view);
  }

  /**
   * Creates or replaces the value of one variable for one target (all when not given). Throws invalid_request
   * (name, value, scope, target), plan_restricted (environment_value_bytes; environment_variables_per_project, which
   * counts values, when it adds one) or not_found.
   */
  async set(
    accountId: string,
    projectId: string,
    input: { name: string; value: unknown; scope?: unknown; target?: unknown },
  ): Promise<{ variable: VariableView; created: boolean }> {
    const name = checkName(input.name);
    const value = checkValue(name, input.value);
    const scope = checkScope(name, input.scope);
    const target = checkTarget(name, input.target);
    const project = await this.projects.get(accountId, projectId);
    await this.assertValueSize(accountId, value);
    const sealed = await this.seal(this.em, project.id, { name, value, scope, target });
    // Under the project's lock: the count and the insert cannot interleave with another set.
    return underOwnerLock(this.em, Project, project.id, async (tx) => {
      const now = this.clock.now();
      const row = await tx.findOne(EnvironmentVariable, { projectId: project.id, name, target });
      if (row) {
        await tx.nativeUpdate(EnvironmentVariable, { id: row.id }, { ...sealed, updatedAt: now });
        return { variable: view(Object.assign(row, sealed, { updatedAt: now })), created: false };
      }
      await this.entitlements.assertWithin(
        accountId,
        'environment_variables_per_project',
        await tx.count(EnvironmentVariable, { projectId: project.id }),
      );
      const fresh = Object.assign(new EnvironmentVariable(), {
        projectId: project.id,
        ...sealed,
        createdAt: now,
        updatedAt: now,
      });
      await tx.insert(fresh);
      return { variable: view(fresh), created: true };
    });
  }

  /**
   * Removes a variable: its value for `target`, or every value of it when no target is given. Throws invalid_request
   * for a bad target, not_found when the project has no such value.
   */
  async remove(accountId: string, projectId: string, name: string, target?: unknown): Promise<void> {
    const only = target === undefined ? {} : { target: checkTarget(name, target) };
    const project = await this.projects.get(accountId, projectId);
    const n = await this.em.fork().nativeDelete(EnvironmentVariable, { projectId: project.id, name, ...only });
    if (n === 0) throw notFound('Environment variable');
  }

  /**
   * Validates variables given with an upload that creates a project: a JSON object text
   * `{"NAME": "value" | {"value": "...", "scope": "build|runtime|both", "target": "all|production|preview"}}`.
   * Throws invalid_request naming the bad variable (never its value) or plan_restricted; writes nothing.
   */
  async parseNew(accountId: string, text: string, field = 'environment'): Promise<NewVariable[]> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // The parser's message quotes the text, which holds secrets: it is not passed on.
      throw invalid(`The ${field} part is not valid JSON: send an object {"NAME": "value", ...}`, { field });
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw invalid(`The ${field} part must be a JSON object {"NAME": "value", ...}`, { field });
    const vars: NewVariable[] = [];
    for (const [rawName, entry] of Object.entries(parsed)) {
      const name = checkName(rawName, `${field}.${rawName.slice(0, 100)}`);
      const at = `${field}.${name}`;
      if (typeof entry === 'string') {
        vars.push({ name, value: checkValue(name, entry, at), scope: 'both', target: 'all' });
        continue;
      }
      if (
        typeof entry !== 'object' ||
        entry === null ||
        Array.isArray(entry) ||
        Object.keys(entry).some((k) => k !== 'value' && k !== 'scope' && k !== 'target')
      ) {
        throw invalid(
          `${name} must be a string or an object ` +
            `{"value": "...", "scope": "build|runtime|both", "target": "all|production|preview"}`,
          { field: at, name },
        );
      }
      const e = entry as { value?: unknown; scope?: unknown; target?: unknown };
      vars.push({
        name,
        value: checkValue(name, e.value, `${at}.value`),
        scope: checkScope(name, e.scope, `${at}.scope`),
        target: checkTarget(name, e.target, `${at}.target`),
      });
    }
    await this.entitlements.assertWithin(accountId, 'environment_variables_per_project', 0, vars.length);
    for (const v of vars) await this.assertValueSize(accountId, v.value);
    return vars;
  }

  /** Stores variables validated by `parseNew` for a project that has none yet. */
  async storeNew(projectId: string, vars: NewVariable[]): Promise<void> {
    if (!vars.length) return;
    const em = this.em.fork();
    const rows: EnvironmentVariable[] = [];
    const now = this.clock.now();
    for (const v of vars) {
      const sealed = await this.seal(em, projectId, v);
      rows.push(Object.assign(new EnvironmentVariable(), { projectId, ...sealed, createdAt: now, updatedAt: now }));
    }
    await em.insertMany(rows);
  }

  /**
   * The variables a deployment's build gets (scope build or both), from its snapshot (taken now for `target` if it has
   * none).
   */
  async forBuild(operationId: string, projectId: string, target: DeploymentTarget): Promise<Record<string, string>> {
    return this.scoped(operationId, projectId, target, 'build');
  }

  /**
   * The variables a deployment's release gets (scope runtime or both), from its snapshot (taken now for `target` if
   * it has none).
   */
  async forRuntime(operationId: string, projectId: string, target: DeploymentTarget): Promise<Record<string, string>> {
    return this.scoped(operationId, projectId, target, 'runtime');
  }

  /**
   * Every value of the operation's snapshot (both scopes), to mask where a build or a release may
   * print it; none while the operation has taken no snapshot (nothing was handed out) or when it
   * does not decrypt (nothing was handed out either). Never takes a snapshot.
   */
  async valuesOf(operationId: string, projectId: string): Promise<string[]> {
    // Every build asks, to mask its log lines: a read by id without findOne's query building (loadById).
    const snap = await loadById(this.em.fork(), EnvironmentSnapshot, operationId);
    if (!snap) return [];
    return (await this.opened(snap, operationId, projectId).catch(() => [] as TakenVariable[])).map((v) => v.value);
  }

  /** Wraps every project's data key with the current master key; returns how many it re-wrapped. */
  async rewrapAll(): Promise<number> {
    const current = (await this.cipher.masterKeys()).find((k) => k.current)!.id;
    const em = this.em.fork();
    let n = 0;
    for (const row of await em.find(ProjectKey, { keyId: { $ne: current } })) {
      const next = await this.cipher.rewrap({ keyId: row.keyId, wrapped: row.wrapped });
      // Conditional on the old wrapping, so a concurrent re-wrap is never overwritten with an older one.
      n += await em.nativeUpdate(
        ProjectKey,
        { projectId: row.projectId, keyId: row.keyId, wrapped: row.wrapped },
        { keyId: next.keyId, wrapped: next.wrapped, updatedAt: this.clock.now() },
      );
    }
    return n;
  }

  /** How many project data keys each master key wraps. */
  async keyUsage(): Promise<Record<string, number>> {
    const usage: Record<string, number> = {};
    for (const row of await this.em.fork().find(ProjectKey, {}, { fields: ['keyId'] }))
      usage[row.keyId] = (usage[row.keyId] ?? 0) + 1;
    return usage;
  }

  /**
   * Seals `value`, a secret of the project other than a variable (a webhook's signing secret), with the project's data
   * key (made on first use), bound to `aad`: it opens only with the same project and `aad`, and goes with the project.
   */
  async sealSecret(projectId: string, aad: string, value: string): Promise<string> {
    return this.cipher.encrypt(await this.projectKey(this.em, projectId), value, aad);
  }

  /** Opens what sealSecret made for the project and `aad`; throws DecryptError (or a StageError without a key). */
  async openSecret(projectId: string, aad: string, sealed: string): Promise<string> {
    return this.cipher.decrypt(await this.existingKey(this.em, projectId), sealed, aad);
  }

  private async scoped(
    operationId: string,
    projectId: string,
    target: DeploymentTarget,
    want: 'build' | 'runtime',
  ): Promise<Record<string, string>> {
    const vars = await this.snapshot(operationId, projectId, target);
    return Object.fromEntries(vars.filter((v) => v.scope === want || v.scope === 'both').map((v) => [v.name, v.value]));
  }

  /**
   * The operation's snapshot, taken on first call from the project's variables for `target`: of each name, its
   * value for that target, else its value for all.
   */
  private async snapshot(operationId: string, projectId: string, target: DeploymentTarget): Promise<TakenVariable[]> {
    const em = this.em.fork();
    let snap = await em.findOne(EnvironmentSnapshot, { operationId });
    if (!snap) {
      const rows = await em.find(EnvironmentVariable, { projectId }, { orderBy: { name: 'asc' } });
      const taken = new Map<string, EnvironmentVariable>();
      for (const r of rows) if (r.target === target || (r.target === 'all' && !taken.has(r.name))) taken.set(r.name, r);
      let sealed: string | null = null;
      if (taken.size) {
        const key = await this.existingKey(em, projectId);
        const vars: TakenVariable[] = [];
        for (const r of taken.values())
          vars.push({
            name: r.name,
            scope: r.scope as Scope,
            value: await this.open(key, r.name, r.ciphertext, valueAad(projectId, r.name, r.target)),
          });
        sealed = await this.cipher.encrypt(key, JSON.stringify(vars), snapshotAad(projectId, operationId));
      }
      snap = Object.assign(new EnvironmentSnapshot(), {
        operationId,
        projectId,
        sealed,
        targeted: rows.some((r) => r.target !== 'all'),
        createdAt: this.clock.now(),
      });
      try {
        await em.insert(snap);
      } catch (err) {
        // A redelivered stage took it first: both read that one.
        if (!(err instanceof UniqueConstraintViolationException)) throw err;
        snap = await em.fork().findOneOrFail(EnvironmentSnapshot, { operationId });
      }
    }
    return this.opened(snap, operationId, projectId);
  }

  private async opened(snap: EnvironmentSnapshot, operationId: string, projectId: string): Promise<TakenVariable[]> {
    if (!snap.sealed) return [];
    if (snap.projectId !== projectId) throw undecryptable('(snapshot)', 'it belongs to another project');
    const key = await this.existingKey(this.em, projectId);
    return JSON.parse(
      await this.open(key, '(snapshot)', snap.sealed, snapshotAad(projectId, operationId)),
    ) as TakenVariable[];
  }

  private async open(key: WrappedKey, name: string, sealed: string, aad: string): Promise<string> {
    try {
      return await this.cipher.decrypt(key, sealed, aad);
    } catch (err) {
      if (err instanceof DecryptError) throw undecryptable(name, err.message, err);
      throw err;
    }
  }

  private async assertValueSize(accountId: string, value: string): Promise<void> {
    await this.entitlements.assertWithin(accountId, 'environment_value_bytes', Buffer.byteLength(value, 'utf8'), 0);
  }

  private async seal(
    em: EntityManager,
    projectId: string,
    v: NewVariable,
  ): Promise<Pick<EnvironmentVariable, 'name' | 'scope' | 'target' | 'ciphertext' | 'digest'>> {
    const key = await this.projectKey(em, projectId);
    return {
      name: v.name,
      scope: v.scope,
      target: v.target,
      ciphertext: await this.cipher.encrypt(key, v.value, valueAad(projectId, v.name, v.target)),
      digest: await this.cipher.digest(key, v.value),
    };
  }

  private async existingKey(em: EntityManager, projectId: string): Promise<WrappedKey> {
    const row = await em.fork().findOne(ProjectKey, { projectId });
    if (!row) throw undecryptable('(all)', 'the project has no data key');
    return { keyId: row.keyId, wrapped: row.wrapped };
  }

  /** The project's data key, made on first use. */
  private async projectKey(em: EntityManager, projectId: string): Promise<WrappedKey> {
    const row = await em.fork().findOne(ProjectKey, { projectId });
    if (row) return { keyId: row.keyId, wrapped: row.wrapped };
    const key = await this.cipher.createDataKey();
    try {
      const now = this.clock.now();
      await em.fork().insert(Object.assign(new ProjectKey(), { projectId, ...key, createdAt: now, updatedAt: now }));
      return key;
    } catch (err) {
      if (!(err instanceof UniqueConstraintViolationException)) throw err;
      return this.existingKey(em, projectId);
    }
  }
}

/** A stage failure that names the variable and why it does not decrypt; never a value. */
function undecryptable(name: string, why: string, cause?: unknown): StageError {
  return new StageError(
    'environment_undecryptable',
    `Environment variable ${name} does not decrypt (${why}): its stored value was not ` +
      `encrypted for this project and name, was altered, or its master key is missing. ` +
      `Set it again with PUT ` +
      `/api/v1/projects/{projectID}/environment/${name === '(all)' || name === '(snapshot)' ? '{name}' : name}.`,
    { name },
    { cause },
  );
}
