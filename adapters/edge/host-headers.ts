/** How many Host headers a request's raw headers carry (Node keeps the first one in `headers`). */
export function hostHeaders(rawHeaders: string[]): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2)
    if (rawHeaders[i].length === 4 && rawHeaders[i].toLowerCase() === 'host') n++;
  return n;
}
