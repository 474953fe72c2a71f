import http from 'node:http';

/** True once something answers HTTP at `url` (any status: the release is up and listening). */
export function answers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: 1000, headers: { 'user-agent': 'hoist-health-check' } }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}
