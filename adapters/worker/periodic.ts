/**
 * Runs `work` at once (or, with `atOnce: false`, `everyMs` from now), then again `everyMs` after each round
 * ends, until stopped; a round that throws is reported to `failed` and the next one runs as planned.
 * `stopped()` tells a long round to end early.
 * Returns a function that stops it and waits for a round in progress.
 */
export function runPeriodically(
  work: (stopped: () => boolean) => Promise<void>,
  everyMs: number,
  failed: (err: unknown) => void,
  { atOnce = true } = {},
): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();
  const run = async () => {
    try {
      await work(() => stopped);
    } catch (err) {
      failed(err);
    }
    if (!stopped) timer = setTimeout(tick, everyMs).unref();
  };
  const tick = () => {
    round = run();
  };
  if (atOnce) tick();
  else timer = setTimeout(tick, everyMs).unref();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await round;
  };
}
