import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dependencyOrder, type Binding } from '../../adapters/dependency-order.js';
import { KernelError } from '../../adapters/kernel-error.js';

const t = (name: string) => Symbol.for(`test.${name}`);
const b = (name: string, ...deps: string[]): Binding => ({
  token: t(name),
  label: name,
  deps: Object.fromEntries(deps.map((d) => [d, t(d)])),
});
const order = (...bs: Binding[]) => dependencyOrder(bs).map((x) => x.label);
const fails = (bs: Binding[], message: string) =>
  assert.throws(
    () => dependencyOrder(bs),
    (e: Error) => e instanceof KernelError && e.message === message,
  );

test('each binding comes after what it depends on, otherwise in the order given', () => {
  assert.equal(order(b('deployer', 'sandbox', 'storage'), b('storage', 'config'), b('config'), b('sandbox')), [
    'sandbox',
    'config',
    'storage',
    'deployer',
  ]);
  assert.equal(order(b('a'), b('b'), b('c')), ['a', 'b', 'c']);
});

test('a dependency nothing provides is named with who needs it', () => {
  fails([b('worker', 'queue')], 'worker needs test.queue (deps.queue), which nothing provides');
});

test('a cycle is named', () => {
  fails([b('a', 'b'), b('b', 'c'), b('c', 'a')], 'dependency cycle: a -> b -> c -> a');
});

test('two bindings of one token are refused', () => {
  fails([b('x'), { ...b('x'), label: 'other' }], 'other and x both provide test.x');
});

test.run();
