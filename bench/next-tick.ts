// What an idle moment's full garbage collections do to process.nextTick on this Node.js, with and without one tick
// object kept alive (adapters/tick-object.ts): ns per nextTick, trained, then after full collections. Each case runs
// in a process of its own (--expose-gc). Prints figures; never fails on the clock.
// Run: node --import tsx bench/next-tick.ts [collections]
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const COLLECTIONS = Number(process.argv[2] ?? 10);
const tickObject = fileURLToPath(new URL('../adapters/tick-object.ts', import.meta.url));

const child = (pin: boolean) => `
${pin ? `require(${JSON.stringify(tickObject)}).pinTickObject();` : ''}
const timed = () => new Promise((resolve) => {
  let n = 0; const N = 1e6; const t0 = process.hrtime.bigint();
  const f = () => (++n < N ? process.nextTick(f) : resolve(Number(process.hrtime.bigint() - t0) / N));
  process.nextTick(f);
});
(async () => {
  await timed();
  const before = await timed();
  for (let i = 0; i < ${COLLECTIONS}; i++) { await new Promise((r) => setTimeout(r, 20)); global.gc(); }
  await timed();
  console.log(JSON.stringify({ before, after: await timed() }));
})();`;

console.log(`process.nextTick on Node.js ${process.version}, ns a call: trained, then after ${COLLECTIONS} full GCs`);
for (const pin of [false, true])
  for (let run = 0; run < 3; run++) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '-e', child(pin)], { encoding: 'utf8' });
    const { before, after } = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
    const label = pin ? 'one tick object kept (pinTickObject)' : 'nothing kept';
    console.log(`${label.padEnd(38)} ${before.toFixed(0).padStart(5)} → ${after.toFixed(0).padStart(5)} ns`);
  }
