import http from 'node:http';

/**
 * True once something answers HTTP at `url`, or at the unix socket `socket` when given (any status: the release is
 * up and listening).
 */
export function answers(url: string, socket?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const options = { timeout: 1000, headers: { 'user-agent': 'hoist-health-check' }, socketPath: socket };
    const req = http.get(url, options, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * How long to wait before asking a starting release again, `elapsedMs` after its start: 10 ms during
 * the first 2 s (most releases answer within, and each wasted wait adds to the deploy), 100 ms after.
 */
export const nextPollMs = (elapsedMs: number) => (elapsedMs < 2000 ? 10 : 100);
