import type { Deps } from '../core/tokens.js';
import { KernelError } from './kernel-error.js';

/** One binding of the kernel: what it provides, what it needs, and how it is named in errors. */
export interface Binding {
  token: symbol;
  /** `plugin storage-local`, `service hoist.AuthService`. */
  label: string;
  deps: Deps;
}

/** A token's name in messages: its description (`hoist.Storage`). */
export const tokenName = (t: symbol) => t.description ?? String(t);

/**
 * The bindings in an order where each comes after everything it depends on (and otherwise in the
 * order given). Throws a KernelError naming a dependency nothing provides and who needs it, or a cycle.
 */
export function dependencyOrder<B extends Binding>(bindings: B[]): B[] {
  const byToken = new Map<symbol, B>();
  for (const b of bindings) {
    const other = byToken.get(b.token);
    if (other) throw new KernelError(`${b.label} and ${other.label} both provide ${tokenName(b.token)}`);
    byToken.set(b.token, b);
  }
  const order: B[] = [];
  const done = new Set<B>();
  const path: B[] = [];
  const visit = (b: B) => {
    if (done.has(b)) return;
    if (path.includes(b)) {
      const cycle = [...path.slice(path.indexOf(b)), b].map((x) => x.label).join(' -> ');
      throw new KernelError(`dependency cycle: ${cycle}`);
    }
    path.push(b);
    for (const [key, t] of Object.entries(b.deps)) {
      const dep = byToken.get(t);
      if (!dep) throw new KernelError(`${b.label} needs ${tokenName(t)} (deps.${key}), which nothing provides`);
      visit(dep);
    }
    path.pop();
    done.add(b);
    order.push(b);
  };
  bindings.forEach(visit);
  return order;
}
